"""tokend's settings: the TOML tables of every feature, merged and checked."""
