import pytest
from lsp_harness import CONFIG, initialize


@pytest.fixture
async def lsp_client_factory(tmp_path):
    """Starts servers with given initializationOptions / client capabilities; stops them after."""
    clients = []

    async def start(*, options: dict | None = None, configure: dict | None = None, root=None, **caps):
        client = await CONFIG.start()
        clients.append(client)
        for section, value in (configure or {}).items():
            client.set_configuration(value, section=section)
        options = dict(options or {})
        options["settings"] = {"debounceMs": 50, **options.get("settings", {})}
        client.init_result = await initialize(client, root or tmp_path, options=options, **caps)
        return client

    yield start
    for client in clients:
        try:
            await client.shutdown_session()
        finally:
            await client.stop()
