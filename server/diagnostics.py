"""Static analysis of open documents: debounced, cancelled when superseded, version-checked.

Each document has at most one pending run. An edit cancels the pending run (still in its
debounce sleep, or queued for the analysis thread); a run that already started finishes but
its result is dropped if the document moved on. Analysis and the conversion to LSP types
happen on one dedicated thread so the event loop keeps answering requests.
"""
from __future__ import annotations

import asyncio
import logging
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lsprotocol import types

from . import analyzer, convert, diagcache

log = logging.getLogger(__name__)


@dataclass
class DocState:
    uri: str
    analyzed_version: int | None = None
    static: list[types.Diagnostic] = field(default_factory=list)  # without data.version: analyzed_version
    static_json: list[str] = field(default_factory=list)  # the same with it, as JSON (written as is)
    converted: diagcache.Converted = field(default_factory=diagcache.Converted)
    dynamo: list[types.Diagnostic] = field(default_factory=list)
    generation: int = 0  # bumps whenever what we would report changes (result ids)
    task: asyncio.Task | None = None
    ticket: "Ticket | None" = None
    fresh: bool = False  # False while a (re)analysis is scheduled: settings may have changed

    @property
    def diagnostics(self) -> list[types.Diagnostic]:
        return self.static + self.dynamo

    @property
    def result_id(self) -> str:
        return f"{self.analyzed_version}.{self.generation}"


class Ticket:
    """Lets a queued job see that it was superseded before it starts."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class Analyses:
    def __init__(self, server) -> None:
        self.server = server
        self.docs: dict[str, DocState] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuselens-analysis")
        self._changed = asyncio.Condition()
        self._warned: set[str] = set()

    def state(self, uri: str) -> DocState:
        return self.docs.setdefault(uri, DocState(uri))

    def schedule(self, uri: str, delay: float) -> None:
        state = self.state(uri)
        if state.ticket is not None:
            state.ticket.cancelled = True
        if state.task is not None and not state.task.done():
            state.task.cancel()
        state.ticket = ticket = Ticket()
        state.fresh = False
        state.task = asyncio.get_running_loop().create_task(self._run(uri, delay, ticket))

    def schedule_all(self) -> None:
        for uri in list(self.docs):
            self.schedule(uri, 0)

    def stop(self) -> None:
        for uri in list(self.docs):
            self.forget(uri)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def forget(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is not None:
            if state.ticket is not None:
                state.ticket.cancelled = True
            if state.task is not None:
                state.task.cancel()

    async def _run(self, uri: str, delay: float, ticket: Ticket) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        document = self.server.open_document(uri)
        if document is None or ticket.cancelled:
            return
        version, text, path = document.version, document.source, document.path
        settings = self.server.settings
        if len(text) > settings.max_file_kb * 1024:
            self._skip_large(uri, version, len(text))
            await self._notify()
            return
        encoding = self.server.position_encoding
        loop = asyncio.get_running_loop()
        state = self.state(uri)
        try:
            outcome = await loop.run_in_executor(
                self.executor, _analyze_job, ticket, text, path, uri, version, settings, encoding,
                self.server.configs, state.converted)
        except RuntimeError:  # the executor is shut down: the server is stopping
            return
        if outcome is None or ticket.cancelled:
            return
        current = self.server.open_document(uri)
        if current is None or current.version != version:
            return  # stale: the user typed on while we analysed
        diagnostics, texts, problem = outcome
        if problem:
            self._warn_once(problem)
        state = self.state(uri)
        state.static, state.static_json, state.analyzed_version, state.fresh = diagnostics, texts, version, True
        state.generation += 1
        self.server.diagnostics_ready(uri, state)
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def current(self, uri: str) -> DocState | None:
        """The state once the document's current version has been analysed (pull diagnostics)."""
        async with self._changed:
            while True:
                document = self.server.open_document(uri)
                if document is None:
                    return None
                state = self.state(uri)
                if state.fresh and state.analyzed_version == document.version:
                    return state
                if state.task is None or state.task.done():
                    self.schedule(uri, 0)
                await self._changed.wait()

    def _skip_large(self, uri: str, version: int, size: int) -> None:
        state = self.state(uri)
        state.static, state.static_json, state.analyzed_version, state.fresh = [], [], version, True
        state.generation += 1
        self.server.diagnostics_ready(uri, state)
        name = uri.rsplit("/", 1)[-1]
        self._warn_once(f"FuseLens: {name} is {size / 2**20:.1f} MB; as-you-type analysis skips files over "
                        f"{self.server.settings.max_file_kb} KB (setting fuselens.maxFileSizeKb).",
                        types.MessageType.Info)

    def _warn_once(self, message: str, kind=types.MessageType.Warning) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.server.notify_user(message, kind)


def _analyze_job(ticket, text, path, uri, version, settings, encoding, configs, converted):
    """Runs on the analysis thread. Returns None when superseded before starting."""
    if ticket.cancelled:
        return None
    try:
        config, problem = configs.resolve(path, settings)
        if analyzer.excluded(path, config):
            return [], [], problem
        report = analyzer.analyze(text, path, config)
    except analyzer.AnalyzerUnavailable as error:
        return [], [], f"FuseLens: no diagnostics, {error}"
    except Exception as error:  # an analyzer bug must not take the server down
        log.error("analyzer failed on %s:\n%s", path, traceback.format_exc())
        return [], [], f"FuseLens analyzer failed on {path}: {type(error).__name__}: {error}"
    positions = convert.Positions(text, encoding)
    diagnostics, texts = converted.convert(report, positions, uri=uri, path=path, version=version,
                                           overrides=settings.severity)
    return diagnostics, texts, problem
