"""Reading slot, job and submitter ClassAds from files and request bodies."""

from .batch import AdBatch, AdFormatError, AdProblem, RepeatedAd
from .reader import iter_ads, parse_ads, parse_in_steps, read_ads, stream_ads

__all__ = ["AdBatch", "AdFormatError", "AdProblem", "RepeatedAd", "iter_ads", "parse_ads", "parse_in_steps",
           "read_ads", "stream_ads"]
