"""The gauge's state on the session row: what a restarted daemon needs to answer a session's
snapshot without reading its messages (core.session.gauge_state: the live messages' count and tokens,
the anchor and what was added since, totals, costs, time figures), JSON written by every change
in its transaction with the version it belongs to. NULL for rows no change has written since:
those sessions load whole, as before, and get it with their next change.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("gauge_state", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions", recreate="never") as batch:
        batch.drop_column("gauge_state")
