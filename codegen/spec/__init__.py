"""The spec: the API model of one release, its YAML, the rules every string obeys, releases and their records, the target's facts, the API diff."""
