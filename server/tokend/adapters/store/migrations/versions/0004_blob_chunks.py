"""Long texts stored in chunks: `blob_chunks`, one row per piece of about a million
characters under the text's content address, so that a 100 MB tool output is written and
read a chunk at a time. A tool output kept this way has an empty `tool_outputs.text` and its
length in `tool_outputs.chars`; those stored before keep their text inline.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blob_chunks",
        sa.Column("ref", sa.String(80), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("start", sa.BigInteger(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("blob_chunks")
