"""The estimates' calibration kept in a store (core.ports.StoredCalibration): one row, its state
an opaque JSON object, read and written each in one transaction of the store's."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tokend.adapters.store import rows
from tokend.adapters.store.models import CalibrationRow
from tokend.adapters.store.rows import ReadsAndWrites

CALIBRATION_KEY = "default"


class SqlCalibration(ReadsAndWrites):
    """core.ports.StoredCalibration on a store's read and write transactions."""

    def load_calibration(self) -> dict[str, Any]:
        with self._reading() as session:
            row = session.get(CalibrationRow, CALIBRATION_KEY)
            return {} if row is None else dict(row.state)

    def save_calibration(self, state: Mapping[str, Any]) -> None:
        """Insert or overwrite the calibration (one upsert: daemons sharing a database may
        save at the same moment)."""
        values = {"key": CALIBRATION_KEY, "state": dict(state), "updated_at": datetime.now(UTC)}
        with self._writing() as session:
            session.execute(rows.upsert(session, CalibrationRow, [values], ("state", "updated_at")))
