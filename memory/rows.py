"""Model instances from rows of precompiled SQL, for the few reads every request makes.

The ORM compiles a query, works out each column's converters and resolves the model's init order on every
call; a raw queryset still does the last two. On the hot paths (a key or token found by its secret, a
retrieval's hits by seq) that was most of the read. A :class:`RowLoader` does that work once per model
and database vendor: its SELECT list is every concrete column in field order, and :meth:`RowLoader.load`
turns such a row into the instance the ORM would give (Django's own converters applied; tested against
the ORM field by field in ``tests/memory/test_rows.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar, cast

from django.db import connection, models
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=models.Model)


class _Plan:
    """What a model's rows need on one database vendor, worked out once."""

    def __init__(self, model: type[models.Model]) -> None:
        meta = model._meta
        quote = connection.ops.quote_name
        fields = meta.concrete_fields
        self.names = [field.attname for field in fields]
        # A concrete field is one with a column (Django's definition): the cast only says so.
        self.columns = [quote(cast(str, field.column)) for field in fields]
        self.converters = []
        for index, field in enumerate(fields):
            column = field.get_col(meta.db_table)
            functions = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if functions:
                self.converters.append((index, column, functions))


class RowLoader(Generic[M]):
    """Instances of ``model`` from rows whose first columns are :meth:`columns` (extra columns after
    them are the caller's)."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._plans: dict[str, _Plan] = {}  # by database vendor, made at first use (apps ready)

    def _plan(self) -> _Plan:
        plan = self._plans.get(connection.vendor)
        if plan is None:
            plan = self._plans[connection.vendor] = _Plan(self.model)
        return plan

    def columns(self, table_alias: str = "") -> str:
        """The SELECT list: every concrete column, in field order (prefixed with ``table_alias.``)."""
        prefix = f"{table_alias}." if table_alias else ""
        return ", ".join(prefix + column for column in self._plan().columns)

    @property
    def width(self) -> int:
        """How many of a row's values are the model's."""
        return len(self._plan().columns)

    def load(self, row: Sequence[Any]) -> M:
        """The instance whose columns are the first :attr:`width` values of ``row``."""
        plan = self._plan()
        values = list(row[: len(plan.columns)])
        for index, column, functions in plan.converters:
            value = values[index]
            for convert in functions:
                value = convert(value, column, connection)
            values[index] = value
        model = self.model
        if pre_init.has_listeners(model) or post_init.has_listeners(model):
            return model.from_db(connection.alias, plan.names, values)
        # Model.__init__ sets each value through its field's descriptor and sends the init signals:
        # with no receiver of either, filling the instance's dict gives the same instance, faster.
        instance = model.__new__(model)
        instance.__dict__.update(zip(plan.names, values, strict=True))
        state = instance._state = ModelState()
        state.adding, state.db = False, connection.alias
        return instance
