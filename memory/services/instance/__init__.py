"""Moving an instance: ``export_instance`` writes every table (keys and token hashes, providers,
memories with their history, settings, the audit log, the ledger, the replay queue, the Studio's
users) and the vectors into a directory of newline-delimited JSON files with a manifest;
``import_instance`` writes them into an empty instance, resumable, then checks that both sides hold
the same rows. Through the ORM's connection only: any engine Django runs on, either side.

``tables`` (what moves, one row's canonical form, the upserts), ``archive`` (the files and the
manifest), ``vectors`` (copied with their signature, or left to re-embed), ``exporting``,
``importing`` (the checkpoint) and ``verification`` (counts and checksums). docs/operations.md,
"Moving an instance", is the operator's side.
"""

from memory.services.instance.exporting import export_instance
from memory.services.instance.importing import ImportReport, import_instance
from memory.services.instance.tables import TransferError
from memory.services.instance.verification import Verification, verify_database, verify_directory

__all__ = [
    "ImportReport",
    "TransferError",
    "Verification",
    "export_instance",
    "import_instance",
    "verify_database",
    "verify_directory",
]
