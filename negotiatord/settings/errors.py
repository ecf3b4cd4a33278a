"""The one error a config can raise, shared by the loader and the group tree it builds."""


class ConfigError(Exception):
    """The config cannot be used; the message names the file and the line or param at fault."""
