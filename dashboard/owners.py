"""Which owner (ApiKey) a Studio request is scoped to.

Every tab reads one owner, chosen in the owner selector and carried in the
``owner`` parameter of every link and form (remembered in the session for
bare URLs). "All owners" is a read-only view offered to superusers only and
never the default; a write always names one concrete owner (nothing the
Studio creates, imports or compacts is ownerless, as the original's were).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.exceptions import DomainError
from memory.models import ApiKey
from memory.principals import Principal
from memory.services.auth import principal_for_staff

ALL = "all"
SESSION_KEY = "studio_owner"


@dataclass(frozen=True)
class OwnerScope:
    """The owners a user may pick and the one this request shows (``None`` = all owners)."""

    principal: Principal
    owners: list[ApiKey]
    selected: ApiKey | None
    can_choose_all: bool
    names: dict = field(default_factory=dict)

    @property
    def is_all(self) -> bool:
        return self.selected is None and bool(self.owners)

    @property
    def is_empty(self) -> bool:
        return not self.owners

    @property
    def param(self) -> str:
        """The value of the ``owner`` parameter that reproduces this scope."""
        if self.selected is not None:
            return str(self.selected.pk)
        return ALL if self.owners else ""

    @property
    def api_key_id(self) -> str | None:
        """The owner filter for selectors: ``None`` reads every owner."""
        return str(self.selected.pk) if self.selected is not None else None

    def name_of(self, owner_id) -> str:
        return self.names.get(owner_id, str(owner_id))


def principal_for(request) -> Principal:
    return principal_for_staff(request.user)


def owner_scope(request) -> OwnerScope:
    """Resolve the ``owner`` parameter (GET or POST), falling back to the session, then the first key."""
    principal = principal_for(request)
    keys = ApiKey.objects.select_related("provider").order_by("name", "created_at")
    owners = [key for key in keys if principal.can_reach(key.pk)]
    can_choose_all = bool(request.user.is_superuser and principal.is_global)
    wanted = request.POST.get("owner") or request.GET.get("owner") or request.session.get(SESSION_KEY, "")
    by_id = {str(key.pk): key for key in owners}
    selected = by_id.get(wanted)
    if selected is None and not (wanted == ALL and can_choose_all) and owners:
        active = [key for key in owners if key.is_active]
        selected = (active or owners)[0]
    scope = OwnerScope(
        principal=principal,
        owners=owners,
        selected=selected,
        can_choose_all=can_choose_all,
        names={key.pk: key.name for key in owners},
    )
    if scope.param and request.session.get(SESSION_KEY) != scope.param:
        request.session[SESSION_KEY] = scope.param
    return scope


def write_owner(request, scope: OwnerScope) -> ApiKey:
    """The concrete owner a write goes to: the selected one, or the ``target_owner`` field
    when the page shows all owners. Raises ``DomainError`` when none is named."""
    if scope.selected is not None:
        return scope.selected
    target = request.POST.get("target_owner", "")
    if not target:
        raise DomainError("Choose the API key this belongs to.", field="target_owner")
    return scope.principal.resolve_owner(target, field="target_owner")
