"""The negotiator's side of a cycle with real schedds, as HTCondor's ``matchmaker.cpp`` runs it.

Before the cycle, each submitter's resource requests are fetched from its schedd through
``NEGOTIATE`` (``prefetchResourceRequestLists``) and become the cycle's idle jobs; after it, each
submitter's matches are handed to its schedd in a ``NEGOTIATE`` session of their own, with the claim
ids of the slots' private ads, and its refused requests are rejected with their reason. The schedd
then claims the slots itself and starts the jobs.

The conversation (:mod:`~.protocol`) rides on :mod:`negotiatord.cedar`; the cycle between the two
halves is the same pure function the dry run and the replay run.
"""
