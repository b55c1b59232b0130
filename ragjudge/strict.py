"""The base of every settings model (the config's sections, the judges' own settings and
definitions): unknown keys refused, values checked on assignment too, and YAML's true/false
never taken for a number (``workers: true`` would otherwise be 1). Imports only pydantic, so
that the config and the judges can both build on it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator


class Strict(BaseModel):
    """A pydantic model that forbids unknown keys and refuses booleans for numbers."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value: Any, info: Any) -> Any:
        # YAML's true/false would otherwise pass as 1/0 for a number (workers: true -> 1)
        if isinstance(value, bool):
            annotation = str(cls.model_fields[info.field_name].annotation)
            if ("int" in annotation or "float" in annotation) and "bool" not in annotation:
                raise ValueError("expected a number, not true/false")
        return value
