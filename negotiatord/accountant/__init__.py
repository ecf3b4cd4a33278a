"""The accountant: customer priorities and usage (pure), persisted per cycle in SQLite."""

from negotiatord.accountant.records import MIN_PRIORITY, MIN_PRIORITY_FACTOR, CustomerRecord
from negotiatord.accountant.priorities import AccountantState, advance
from negotiatord.accountant.edits import UnknownCustomer
from negotiatord.accountant.store import AccountantStore, AccountantStoreError

__all__ = [
    "MIN_PRIORITY",
    "MIN_PRIORITY_FACTOR",
    "AccountantState",
    "AccountantStore",
    "AccountantStoreError",
    "CustomerRecord",
    "UnknownCustomer",
    "advance",
]
