"""The contract clauses the suite reports on, each tied to the spec, and which tests judge each one.

A clause is named after the spec: ``US4.7`` is user story 4, acceptance scenario 7; ``FR-081`` a
functional requirement; ``SC-009`` a success criterion; ``EDGE-…`` an edge case of the spec's list.
Clauses named ``X-…`` are schemadoc's own contract beyond the spec (history, merge patch, raw patches,
dry runs, the change feed, REST wire details): an implementation that does not offer the feature gets
"not applicable" for them (detected per call, see ``doors.OPTIONAL_TOOLS``), never a failure.

A test is mapped by name in :data:`TESTS`, by a ``@pytest.mark.clause("US4.7", ...)`` marker, or else by
its module's default in :data:`MODULES`; :func:`clauses_of` is the one lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLAUSES", "MODULES", "TESTS", "Clause", "clauses_of"]


@dataclass(frozen=True)
class Clause:
    id: str
    title: str
    optional: bool = False
    """Beyond the spec: not applicable when the implementation does not offer it."""


_SPEC = {
    "US0.4": "the running server answers with its schema URI and metadata",
    "US1.1": "document_create with no arguments returns a new ULID doc_id and a document with the defaults",
    "US1.2": "required fields with defaults are initialised from them (recursively, through $ref)",
    "US1.3": "required fields without defaults fail creation, listing every one",
    "US1.4": "sequential creates never collide",
    "US1.5": "the root of a new document is the initial tree and validates",
    "US2.1": "reading a nested path returns only that value",
    "US2.2": "reading an array index returns that item",
    "US2.3": "reading the root returns the whole document",
    "US2.4": "an unknown doc_id is document-not-found",
    "US2.5": "an invalid path is path-invalid with guidance",
    "US2.6": "a missing path is path-not-found naming the deepest existing ancestor",
    "US3.1": "the schema of a path is that node's schema with every constraint",
    "US3.2": "node schemas are dereferenced",
    "US3.3": "an array item's schema is the items schema",
    "US3.4": "polymorphic nodes list every alternative",
    "US3.5": "a path the schema does not allow is an error",
    "US4.1": "an update at the current version validates, persists and moves the version on by one",
    "US4.2": "an invalid update changes nothing and reports every error",
    "US4.3": "setting a required field to null is rejected with a report",
    "US4.4": "an update below a missing intermediate is path-not-found with the deepest ancestor",
    "US4.5": "an update at an array index changes that item",
    "US4.6": "all constraint violations come in one report",
    "US4.7": "a stale version is version-conflict naming the current version",
    "US4.8": "of two writers from one version only the first succeeds",
    "US5.1": "creating at /- appends to an array",
    "US5.2": "creating an optional member adds it",
    "US5.3": "creating where something exists is conflict",
    "US5.4": "an invalid creation reports every error and changes nothing",
    "US5.5": "creating below a missing intermediate is path-not-found with guidance",
    "US6.1": "deleting an optional member removes it",
    "US6.2": "deleting a required member is rejected",
    "US6.3": "deleting an array item reindexes the array",
    "US6.4": "deleting a missing path is path-not-found",
    "US6.5": "a deletion breaking minItems is rejected",
    "US7.1": "the list names every document with its schema and creation time",
    "US7.2": "a server without documents lists none",
    "US7.3": "the list pages",
    "US8.1": "the export (schema://{doc_id}) is the complete document after every edit",
    "FR-011": "documents survive a restart of the server (SC-009: no acknowledged write is lost)",
    "FR-021": "paths are RFC 6901 pointers: escapes are decoded per token after splitting, and a malformed pointer "
              "(a bad ~ escape, an index with a leading zero or no number) is path-invalid on reads, updates and "
              "deletes, changing nothing",
    "FR-024": "negative indices count from the end; - appends",
    "FR-025": "the root is addressed as /",
    "FR-059": "validation reports every error, not the first only",
    "FR-061": "every write is validated, also on documents loaded from storage (validation at every boundary)",
    "FR-065a": "every door exposes the same operations with the same results",
    "FR-069": "MCP tools declare input and output schemas; documents are schema:// resources",
    "FR-070": "REST: OpenAPI 3.1, /docs, /redoc, standard statuses",
    "FR-077": "versions grow by exactly one per successful write, across restarts too",
    "FR-080": "the version is checked before a write, also after a restart",
    "FR-084": "writes to one document are serialised: no lost update, also between processes on one storage",
    "FR-096": "every error code is in the catalogue with its category; error objects have every member",
    "FR-117": "an operation fully succeeds or fully fails",
    "EDGE-requests": "wrong, missing or malformed arguments are invalid-request (typed errors at the boundary)",
    "EDGE-pointers": "a pointer to nothing (an array's - outside an append, an index out of range, a missing member "
                     "mid-path) is path-not-found with its deepest ancestor on reads, updates and deletes, changing "
                     "nothing",
}

_EXTENSIONS = {
    "X-patch": "every write returns its strict RFC 6902 patch; raw patches apply atomically",
    "X-dry-run": "a dry run answers what the write would (its result or its error, marked dry_run, with the patch) "
                 "and changes nothing",
    "X-history": "the journal lists every version with its operation and patch, page by page",
    "X-past-reads": "reads and exports at a past version",
    "X-diff": "diffs between any two versions",
    "X-revert": "a revert is a new version with an old content",
    "X-delete-document": "delete, undelete and purge of whole documents",
    "X-merge-patch": "RFC 7396 merge patches",
    "X-changes": "the cross-document change feed",
    "X-rest-wire": "REST details: ETag / If-Match, catalogued HTTP errors, request limits, the event stream",
    "X-mcp-wire": "MCP details: structured results, error results, resources",
    "X-agents": "agents on large documents: bounded reads, outline, next-incomplete, move, search, stats, render",
    "X-codes": "schemadoc's error codes beyond the spec (invalid-request, root-not-deletable, ...) where it uses them",
}

CLAUSES: dict[str, Clause] = {
    **{key: Clause(key, title) for key, title in _SPEC.items()},
    **{key: Clause(key, title, optional=True) for key, title in _EXTENSIONS.items()},
}

MODULES: dict[str, tuple[str, ...]] = {
    "test_schema": ("US3.1",),
    "test_create_and_read": ("US1.1",),
    "test_update": ("US4.1",),
    "test_create_node": ("US5.1",),
    "test_delete_node": ("US6.1",),
    "test_list_and_export": ("US7.1",),
    "test_patch_and_dry_run": ("X-patch",),
    "test_large_documents": ("X-agents",),
    "test_history": ("X-history",),
    "test_history_property": ("X-history", "X-diff", "X-revert", "X-changes"),
    "test_revert_and_delete": ("X-revert",),
    "test_merge_patch": ("X-merge-patch",),
    "test_changes": ("X-changes",),
    "test_requests": ("EDGE-requests",),
    "test_rest_wire": ("X-rest-wire",),
    "test_mcp_wire": ("X-mcp-wire",),
    "test_doors_agree": ("FR-065a",),
    "test_state_machine": ("US4.1", "US4.2", "US4.7", "FR-077", "X-dry-run"),
    "test_nested_defaults": ("US1.2", "US1.3"),
    "test_zz_observed": ("FR-096",),
    "test_restart": ("FR-011",),
    "test_pointers": ("EDGE-pointers",),
}

TESTS: dict[str, tuple[str, ...]] = {
    # story 0, 3
    "test_the_root_schema_is_the_configured_schema_with_its_uri": ("US0.4",),
    "test_the_dereferenced_root_schema_inlines_references_but_keeps_recursion_finite": ("US3.2",),
    "test_the_schema_of_metadata_is_its_object_schema_with_every_constraint": ("US3.1",),
    "test_the_schema_of_an_array_item_is_the_item_schema": ("US3.3",),
    "test_the_schema_of_a_oneof_lists_every_alternative_dereferenced": ("US3.4",),
    "test_the_schema_of_a_member_of_a_oneof_alternative_is_found": ("US3.4",),
    "test_recursive_sections_have_a_schema_at_any_depth": ("US3.2",),
    "test_the_schema_with_a_doc_id_tells_whether_the_node_exists": ("US3.1",),
    "test_the_undereferenced_schema_of_a_node_keeps_its_references": ("US3.2",),
    "test_a_path_the_schema_does_not_allow_is_path_not_found": ("US3.5",),
    "test_a_malformed_schema_path_is_path_invalid": ("US3.5",),
    "test_the_schema_of_an_unknown_document_is_document_not_found": ("US2.4",),
    # stories 1, 2
    "test_create_returns_a_ulid_at_version_1_with_a_valid_report": ("US1.1",),
    "test_a_doc_id_names_the_same_document_in_either_case": ("US1.1", "US2.4"),
    "test_the_initial_tree_holds_the_schema_defaults_and_validates": ("US1.2", "US1.5"),
    "test_create_reports_the_servers_schema_uri": ("US1.1", "US0.4"),
    "test_reading_the_root_of_a_new_document_returns_the_initial_tree": ("US1.5",),
    "test_many_creates_never_reuse_a_doc_id": ("US1.4",),
    "test_reading_a_nested_member_returns_only_that_value": ("US2.1",),
    "test_reading_an_array_index_returns_that_item": ("US2.2",),
    "test_a_negative_index_counts_from_the_end_and_reports_the_concrete_path": ("FR-024",),
    "test_reading_the_root_returns_the_whole_document_at_its_version": ("US2.3", "FR-025"),
    "test_reading_an_unknown_document_is_document_not_found": ("US2.4",),
    "test_a_doc_id_that_is_not_a_ulid_is_invalid_doc_id": ("US2.4",),
    "test_a_malformed_path_is_path_invalid_with_guidance": ("US2.5",),
    "test_a_path_without_leading_slash_suggests_the_fixed_path": ("US2.5",),
    "test_a_missing_member_is_path_not_found_naming_the_deepest_ancestor": ("US2.6",),
    "test_an_index_out_of_range_is_path_not_found_with_the_array_length": ("US2.6",),
    "test_a_negative_index_out_of_range_is_path_not_found_like_any_other": ("US2.6", "FR-024"),
    "test_a_missing_intermediate_names_what_to_create_first": ("US2.6",),
    # RFC 6901 evaluation (test_pointers.py; the rest judge EDGE-pointers)
    "test_a_malformed_pointer_is_path_invalid_on_reads_updates_and_deletes": ("FR-021",),
    "test_escapes_are_decoded_in_each_token_after_the_path_is_split": ("FR-021",),
    # story 4
    "test_an_update_replaces_the_node_and_moves_the_version_on_by_one": ("US4.1",),
    "test_an_update_at_an_array_index_changes_only_that_item": ("US4.5",),
    "test_an_update_through_a_negative_index_writes_the_concrete_path": ("FR-024",),
    "test_an_update_of_the_root_replaces_the_whole_document": ("FR-025",),
    "test_an_invalid_update_lists_every_violation_and_changes_nothing": ("US4.2", "US4.6", "FR-059", "FR-117"),
    "test_setting_a_required_field_to_null_is_rejected_with_a_report": ("US4.3",),
    "test_an_update_below_a_missing_intermediate_is_path_not_found": ("US4.4",),
    "test_a_stale_version_is_a_version_conflict_naming_both_versions": ("US4.7",),
    "test_a_version_from_the_future_is_a_version_conflict": ("US4.7",),
    "test_of_two_concurrent_writers_from_one_version_exactly_one_wins": ("US4.8",),
    # story 5
    "test_appending_with_dash_creates_the_item_at_a_concrete_index": ("US5.1", "FR-024"),
    "test_creating_at_a_negative_index_inserts_before_that_item_at_a_concrete_index": ("FR-024",),
    "test_creating_at_an_index_inserts_and_shifts_the_rest": ("US5.1",),
    "test_creating_an_optional_member_adds_it": ("US5.2",),
    "test_creating_where_a_member_exists_is_a_conflict": ("US5.3",),
    "test_an_invalid_new_item_reports_every_violation_and_changes_nothing": ("US5.4", "FR-059", "FR-117"),
    "test_a_member_the_schema_does_not_allow_is_a_validation_failure": ("US5.4",),
    "test_creating_below_a_missing_intermediate_names_what_to_create_first": ("US5.5",),
    "test_inserting_past_the_end_of_an_array_is_path_not_found_with_its_length": ("US5.5",),
    # story 6
    "test_deleting_an_optional_member_removes_it_and_returns_it": ("US6.1",),
    "test_deleting_a_required_member_is_rejected_as_required_missing": ("US6.2",),
    "test_deleting_an_array_item_reindexes_the_rest": ("US6.3",),
    "test_deleting_through_a_negative_index_removes_the_last_item": ("US6.3", "FR-024"),
    "test_deleting_a_missing_path_is_path_not_found": ("US6.4",),
    "test_a_delete_that_would_break_min_items_is_rejected": ("US6.5", "FR-117"),
    "test_the_root_cannot_be_deleted": ("US6.2",),
    # stories 7, 8
    "test_a_server_without_documents_lists_none": ("US7.2",),
    "test_the_list_shows_every_document_with_its_summary": ("US7.1",),
    "test_the_list_is_fresh_after_every_create_and_write": ("US7.1",),
    "test_every_error_object_has_every_member_with_the_specs_category": ("FR-096",),
    "test_pages_cover_every_document_once": ("US7.3",),
    "test_the_export_is_the_result_of_every_edit": ("US8.1",),
    "test_the_export_of_a_new_document_is_its_initial_tree": ("US8.1",),
    "test_exporting_an_unknown_document_fails_as_not_found": ("US8.1", "US2.4"),
    # patches and dry runs
    "test_a_patch_that_breaks_the_schema_changes_nothing": ("X-patch", "FR-117"),
    "test_a_dry_run_returns_patch_and_report_and_changes_nothing": ("X-dry-run",),
    "test_a_dry_run_of_an_invalid_write_fails_like_the_write_with_the_violations": ("X-dry-run", "FR-059"),
    "test_a_dry_run_still_checks_the_version_and_the_path": ("X-dry-run",),
    "test_dry_runs_and_failures_leave_the_version_sequence_unbroken": ("X-dry-run", "FR-077"),
    "test_a_patch_with_a_stale_version_is_a_version_conflict": ("X-patch", "US4.7"),
    "test_a_patch_into_a_missing_path_is_path_not_found": ("X-patch", "US4.4"),
    # history, past reads, diffs
    "test_a_read_at_a_past_version_returns_that_content_and_names_that_version": ("X-past-reads",),
    "test_negative_indices_resolve_against_the_past_version": ("X-past-reads",),
    "test_a_path_missing_at_the_past_version_is_path_not_found_with_that_versions_ancestor": ("X-past-reads",),
    "test_a_version_beyond_the_latest_is_version_not_found": ("X-past-reads",),
    "test_a_version_that_is_no_version_number_is_invalid_request": ("X-past-reads",),
    "test_every_version_can_be_read_whole": ("X-past-reads",),
    "test_version_zero_read_whole_is_version_not_found_naming_the_latest": ("X-past-reads",),
    "test_a_diff_applied_to_the_from_version_gives_the_to_version_in_both_directions": ("X-diff",),
    "test_the_diff_of_a_version_with_itself_is_empty": ("X-diff",),
    "test_the_diff_of_a_single_write_is_that_writes_patch": ("X-diff",),
    "test_a_diff_with_a_version_the_document_lacks_fails": ("X-diff",),
    # revert and whole-document deletion
    "test_a_deleted_document_is_gone_from_reads_writes_and_the_list": ("X-delete-document",),
    "test_a_delete_with_a_stale_version_is_a_version_conflict": ("X-delete-document",),
    "test_a_delete_has_no_dry_run": ("X-delete-document",),
    "test_an_undelete_brings_the_document_back_with_its_history": ("X-delete-document",),
    "test_only_a_deleted_document_can_be_undeleted_or_purged": ("X-delete-document",),
    "test_a_purged_document_is_gone_for_good": ("X-delete-document",),
    # the wire
    "test_every_tool_is_declared_with_input_and_output_schemas": ("FR-069",),
    "test_every_document_is_a_listed_json_resource": ("FR-069", "US8.1"),
    "test_the_exported_resource_matches_the_root_node": ("US8.1",),
    "test_the_openapi_document_is_3_1_and_describes_every_endpoint": ("FR-070",),
    "test_the_api_documentation_pages_are_served": ("FR-070",),
    "test_writes_through_each_door_show_in_the_history_and_feed_of_every_door": ("FR-065a", "X-changes"),
    "test_every_error_code_any_door_returned_is_in_the_catalog": ("FR-096",),
    "test_each_door_returned_every_reachable_spec_code": ("FR-096",),
    "test_each_door_returned_every_reachable_extension_code": ("X-codes",),
    "test_no_door_broke_the_shape_of_the_wire": ("FR-096",),
    # defaults on other schemas (in process, or a server started by command)
    "test_defaults_inside_a_defaulted_object_behind_ref_make_a_valid_document": ("US1.2",),
    "test_two_levels_deep_the_outer_default_wins_and_recursion_terminates": ("US1.2",),
    "test_required_fields_without_any_default_are_all_named": ("US1.3",),
    # restarts, durability, two processes (stdio command only)
    "test_documents_and_versions_survive_a_restart": ("FR-011", "FR-077"),
    "test_an_acknowledged_write_survives_kill_9": ("FR-011",),
    "test_writes_after_a_restart_are_validated_and_version_checked": ("FR-061", "FR-080"),
    "test_random_writes_and_restarts_keep_every_acknowledged_version": ("FR-011", "FR-077", "FR-080", "X-dry-run"),
    "test_two_processes_on_one_storage_never_both_win_from_one_version": ("FR-084", "US4.8"),
}


def clauses_of(module: str, name: str, marked: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The clauses a test judges: its marker's, else its own entry, else its module's (``FR-096`` at worst)."""
    return marked or TESTS.get(name) or MODULES.get(module) or ("FR-096",)
