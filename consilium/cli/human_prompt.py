"""The terminal prompt of a person at the table (``simulate --human ROLE`` on a terminal).

Each turn shows what the member's model call would see (the case and the member's brief; for a vote, the
report under review) and reads the answer from stdin: text ends with a blank line or end of input; a vote is
accept or dissent, a reason and, on a dissent, the change asked for. An answer a model's answer in its place
would fail (over the length budget, a missing section) is said why and asked again. Both formats' turns share
the terminal, one at a time.
"""

from __future__ import annotations

import asyncio
import threading
from typing import IO, Any

from consilium.agents.schemas import OPINION_SECTIONS
from consilium.graphs.consilium.answers import AnswerMissing
from consilium.graphs.consilium.seat import AnswerInvalid, HumanPrompt, check_answer

__all__ = ["TerminalAnswers"]


class TerminalAnswers:
    """Answers typed at the terminal (``stdin``), the turns shown on ``out``."""

    name = "terminal"
    where = "terminal"

    def __init__(self, stdin: IO[str], out: IO[str]) -> None:
        self._stdin, self._out = stdin, out
        self._lock = asyncio.Lock()
        self._lines: asyncio.Queue[str] | None = None
        self._case_shown = False

    async def answer(self, prompt: HumanPrompt) -> Any:
        async with self._lock:  # one turn at a time on the terminal, whichever format asks first
            self._show(prompt)
            while True:
                answer = await (self._opinion(prompt) if prompt.stage == "opinion" else self._vote(prompt))
                try:
                    check_answer(prompt, answer)
                    return answer
                except AnswerInvalid as exc:
                    self._say(f"  not accepted: {exc}. Please answer again.\n")

    def _say(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def _show(self, prompt: HumanPrompt) -> None:
        what = "opinion" if prompt.stage == "opinion" else f"vote, review round {prompt.round}"
        self._say(f"\n== Your turn: {prompt.role_label} ({prompt.role_kind}) · {prompt.format} · {what}\n")
        if not self._case_shown:
            self._say(f"CASE\n{prompt.case_text}\n\nYour brief: {prompt.justification}\n")
            self._case_shown = True
        if prompt.stage == "opinion":
            budget = f" (at most {prompt.budget_chars} characters)" if prompt.budget_chars else ""
            self._say(f"Write your independent pre-consilium opinion{budget}; no member sees another's opinion "
                      "before the moderator's synthesis.\n")
        else:
            self._say(f"The moderator's shared report, version {prompt.report_version}:\n\n{prompt.report_text}\n\n"
                      "Vote accept if you can sign it as it stands, or dissent if something clinically important "
                      "is wrong or missing (the members vote at the same time: no one sees another's vote).\n")

    async def _opinion(self, prompt: HumanPrompt) -> Any:
        if prompt.format == "free-form":
            return await self._block(prompt, "opinion (end with a blank line):\n")
        sections: dict[str, str] = {}
        for name in OPINION_SECTIONS:
            cap = (prompt.sections or {}).get(name)
            room = f"at most {cap} characters; " if cap else ""
            sections[name] = await self._block(prompt, f"{name.replace('_', ' ')} ({room}end with a blank line):\n")
        return sections

    async def _vote(self, prompt: HumanPrompt) -> Any:
        vote = ""
        while vote not in ("accept", "dissent"):
            vote = (await self._line(prompt, "vote (accept/dissent): ")).strip().lower()
        reason = (await self._line(prompt, "reason: ")).strip()
        change = (await self._line(prompt, "requested change (blank for none): ")).strip() if vote == "dissent" else ""
        return {"vote": vote, "reason": reason, "requested_change": change or None}

    async def _block(self, prompt: HumanPrompt, ask: str) -> str:
        """Lines up to a blank line or the end of input."""
        self._say(ask)
        lines: list[str] = []
        while True:
            line = await self._read(prompt, allow_end=bool(lines))
            if line is None or not line.strip():
                if lines:
                    return "\n".join(lines)
                continue  # leading blank lines before any text
            lines.append(line.rstrip("\n"))

    async def _line(self, prompt: HumanPrompt, ask: str) -> str:
        self._say(ask)
        return await self._read(prompt, allow_end=False) or ""

    async def _read(self, prompt: HumanPrompt, *, allow_end: bool) -> str | None:
        """The next line; None at the end of input after some text, else the run pauses."""
        if self._lines is None:
            self._lines = asyncio.Queue()
            self._start_reader(self._lines)
        line = await self._lines.get()
        if line == "":
            self._lines.put_nowait("")  # the end stays the end
            if allow_end:
                return None
            raise AnswerMissing(f"terminal: {prompt.key}: no answer (input ended)")
        return line

    def _start_reader(self, queue: asyncio.Queue[str]) -> None:
        # A daemon thread: a read still waiting when the run ends (Ctrl-C) must not keep the process alive.
        loop = asyncio.get_running_loop()

        def read() -> None:
            while True:
                line = self._stdin.readline()
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, line)
                except RuntimeError:  # the run's loop has closed
                    return
                if line == "":
                    return

        threading.Thread(target=read, name="consilium-human-stdin", daemon=True).start()
