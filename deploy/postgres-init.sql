-- Runs once on the compose Postgres's first start: the extensions medrag's migrations need, and Prefect's database.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE DATABASE prefect;
