"""Configuration, database, embedded server, migrations, errors and the core tables."""
