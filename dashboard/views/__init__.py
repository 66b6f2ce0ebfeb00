"""The Memory Studio's views, one module per page or tab; ``dashboard/urls.py`` routes to them.

- ``base``: staff-only access, links, the page shell and the htmx tail (:func:`~dashboard.views.base.form_reply`)
- ``shell``: the Memory page (tab and region dispatch) and its memory-enabled switch
- ``memories``: the Memories tab (list, add, edit, delete, health dot, compaction)
- ``transfer``: export and import
- ``sandbox``: the Sandbox tab (retrieval and injection previews)
- ``engine``: the Engine tab (status, reindex, embedding/rerank controls, Qdrant card, charts)
- ``settings_page``: /dashboard/settings
- ``keys``: /dashboard/keys (API keys: create, revoke, delete, provider and fallbacks, test connection)
- ``providers``: /dashboard/providers (memory providers: add, edit, delete, test connection, health dots)

Each view only parses input, calls ``memory``'s services and ``memory.store`` (every memory read
and write, whatever the key's provider), and renders
``"page.html#region"`` for htmx requests (see ``../shared/STYLE.md``, "HTMX pages").
"""
