"""What every stage uses: errors the user sees, files read and written, the hash, the per-user cache, the collector's thresholds, text escaping."""
