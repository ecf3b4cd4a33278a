"""The negotiation cycle: a pure function from snapshot, accountant state and settings to matches."""
