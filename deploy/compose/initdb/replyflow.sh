#!/bin/sh
# replyflow's store: a database and role of its own beside Temporal's,
# created at the first start of the PostgreSQL volume.
set -e
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" <<SQL
CREATE ROLE replyflow LOGIN PASSWORD '$POSTGRES_PASSWORD';
CREATE DATABASE replyflow OWNER replyflow;
SQL
