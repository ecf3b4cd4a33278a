"""The condor config, read by HTCondor itself, as one typed and validated ``Settings`` object."""

from negotiatord.settings.errors import ConfigError
from negotiatord.settings.groups import ROOT_GROUP, GroupSettings, GroupTree
from negotiatord.settings.loader import load_settings
from negotiatord.settings.model import CycleWorker, PslotLoading, ServiceSettings, Settings, SubmitterOrder

__all__ = [
    "ConfigError", "CycleWorker", "GroupSettings", "GroupTree", "PslotLoading", "ROOT_GROUP", "ServiceSettings",
    "Settings", "SubmitterOrder", "load_settings",
]
