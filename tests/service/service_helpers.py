"""Constants the service tests share."""

KEYS = {"key-tenant-a-0001": "acme", "key-tenant-b-0002": "globex"}
"""Two tenants' keys, for the services that have keys."""
