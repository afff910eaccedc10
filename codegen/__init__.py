"""miogen's generator: miopen.h -> YAML API spec -> rendered bindings."""

__version__ = "0.1.0"
GENERATOR_VERSION = __version__
