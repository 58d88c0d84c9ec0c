"""initialize / initialized / configuration / trust."""
from __future__ import annotations

from lsprotocol import types

from ..settings import parse_settings

SECTION = "fuselens"


def initialize(ls, params: types.InitializeParams) -> None:
    from ..app import install_fast_codec

    install_fast_codec(ls.workspace)
    options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    ls.trusted = options.get("trusted") is True
    settings, problems = parse_settings(options.get("settings"))
    ls.settings = settings
    for problem in problems:
        ls.log_client(problem, types.MessageType.Warning)
    client_pulls = params.capabilities.text_document is not None and \
        params.capabilities.text_document.diagnostic is not None
    mode = settings.diagnostic_mode
    ls.pull_mode = mode == "pull" or (mode == "auto" and client_pulls)
    if ls.pull_mode:
        from ..routes import register_pull

        register_pull(ls)  # before pygls computes the capabilities from the registered features


async def initialized(ls, params: types.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    if caps and caps.did_change_watched_files and caps.did_change_watched_files.dynamic_registration:
        watch = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")])
        ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
            id="fuselens-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=watch)]))
    await refresh_configuration(ls)


async def did_change_configuration(ls, params: types.DidChangeConfigurationParams) -> None:
    # Clients that cannot answer workspace/configuration send the settings here.
    pushed = params.settings.get(SECTION) if isinstance(params.settings, dict) else None
    if not await refresh_configuration(ls) and isinstance(pushed, dict):
        apply_settings(ls, pushed)


async def refresh_configuration(ls) -> bool:
    caps = ls.client_capabilities.workspace
    if not (caps and caps.configuration):
        return False
    try:
        values = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
    except Exception as error:  # a client that fails the request: keep what we have
        ls.log_client(f"workspace/configuration failed: {error}", types.MessageType.Warning)
        return False
    if values and isinstance(values[0], dict):
        apply_settings(ls, values[0])
    return True


def apply_settings(ls, raw: dict) -> None:
    settings, problems = parse_settings(raw, ls.settings)
    for problem in problems:
        ls.notify_user(f"FuseLens: {problem}", types.MessageType.Warning)
    if settings == ls.settings:
        return
    ls.settings = settings
    ls.configs.clear()
    ls.analyses.schedule_all()
    ls.refresh_pull()  # pulls wait for the re-analysis (DocState.fresh)


def set_workspace_trust(ls, params) -> None:
    """Custom notification `fuselens/setWorkspaceTrust` {"trusted": bool}: the client tells us
    the user granted (or revoked) trust after start-up."""
    ls.trusted = getattr(params, "trusted", None) is True  # params arrive as a namedtuple


def shutdown(ls, params) -> None:
    for task in [*ls.jobs.values(), *ls.save_jobs.values()]:
        task.cancel()
    ls.analyses.stop()
