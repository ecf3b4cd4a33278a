"""The condor config, read by HTCondor itself, as one typed and validated ``Settings`` object."""

from negotiatord.settings.loader import ConfigError, load_settings
from negotiatord.settings.model import ROOT_GROUP, GroupSettings, PslotLoading, ServiceSettings, Settings

__all__ = [
    "ConfigError", "GroupSettings", "PslotLoading", "ROOT_GROUP", "ServiceSettings", "Settings",
    "load_settings",
]
