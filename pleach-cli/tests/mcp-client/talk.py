# Tools that talk to their client: the official Python SDK (`mcp` on PyPI) against a user's own
# server (`examples/mcp_server.rs`) on stdio and over Streamable HTTP. In the SDK's "legacy" mode
# (`initialize`, so the server can send requests during a call): `import_receipts` logs (filtered
# by `logging/setLevel`; over HTTP on the call's own stream, before its result), `total_expenses`
# reports progress in its own numbers, `split_expense` elicits a typed answer,
# `categorize_expense` samples the client's model. In its default mode (MCP 2026-07-28: no
# requests from server to client) the same questions come as input-required results the SDK
# answers and retries: accept, decline, cancel, an answer that does not fit, `rename_expense`'s
# two rounds, sampling, and a retry carried to other arguments or forged, refused. From a client
# without the callbacks, those tools answer 1020 at once.
# Usage: python talk.py PATH/TO/mcp_server. Exits 1 on any failure.
import asyncio
import json
import re
import subprocess
import sys
import time
import traceback

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CreateMessageResult, ElicitResult, InputRequiredResult, TextContent

ANSWER_WITHIN_S = 5.0


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def talks(target):
    logs = []
    asked = []

    async def on_log(params):
        logs.append(params)

    async def elicit(context, params):
        asked.append(params)
        return ElicitResult(action="accept", content={"people": 4})

    async def sample(context, params):
        asked.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Office"), model="ci-model", stop_reason="endTurn"
        )

    async with Client(
        target, mode="legacy", logging_callback=on_log, elicitation_callback=elicit, sampling_callback=sample
    ) as client:
        receipts = {"receipts": ["taxi", "", "hotel"]}
        imported = await client.call_tool("import_receipts", receipts)
        check(imported.content[0].text == "2", imported.content)
        await client.set_logging_level("warning")
        await client.call_tool("import_receipts", receipts)
        if not isinstance(target, str):
            # On stdio a notification sent before a result may be handled after it.
            await asyncio.sleep(0.2)
        levels = [log.level for log in logs]
        check(levels == ["debug", "info", "warning", "info", "warning"], logs)
        check(logs[0].logger == "import", logs)

        for description, cents in (("train", 4200), ("lunch", 1300)):
            await client.call_tool("add_expense", {"description": description, "cents": cents, "category": "office"})
        ticks = []

        async def on_progress(progress, total, message):
            ticks.append((progress, total, message))

        total = await client.call_tool("total_expenses", {}, progress_callback=on_progress)
        check(total.content[0].text == "5500", total.content)
        await asyncio.sleep(0.1)
        check(ticks == [(1, 2, "train"), (2, 2, "lunch")], ticks)

        split = await client.call_tool("split_expense", {"id": 1})
        check(split.content[0].text == "4 shares of 1050 cents", split.content)
        form = asked[0].requested_schema
        check(form["required"] == ["people"] and form["properties"]["people"]["type"] == "integer", form)

        category = await client.call_tool("categorize_expense", {"description": "printer paper"})
        check(category.content[0].text == "office", category.content)
        check(asked[1].max_tokens == 5 and "printer paper" in asked[1].messages[0].content.text, asked[1])


async def stateless(target):
    """The SDK's default mode, MCP 2026-07-28: each question ends the call with an input-required
    result; the SDK asks its callback and retries, and the tool runs again with the answer."""
    answers = []
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return answers.pop(0)

    async def sample(context, params):
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Travel"), model="ci-model", stop_reason="endTurn"
        )

    async with Client(target, elicitation_callback=elicit, sampling_callback=sample) as client:
        added = await client.call_tool("add_expense", {"description": "train", "cents": 2100, "category": "travel"})
        expense = added.structured_content["id"]
        answers[:] = [
            ElicitResult(action="accept", content={"people": 3}),
            ElicitResult(action="decline"),
            ElicitResult(action="cancel"),
        ]
        for expected in ("3 shares of 700 cents", "the user declined to split it", "the user dismissed the question"):
            split = await client.call_tool("split_expense", {"id": expense})
            check(not split.is_error and split.content[0].text == expected, split.content)
        answers[:] = [ElicitResult(action="accept", content={"people": "three"})]
        unfit = await client.call_tool("split_expense", {"id": expense})
        check(unfit.is_error and unfit.content[0].text.startswith("error 1008:"), unfit.content)

        # Two questions, two rounds; the user sees each once, and the change comes after both.
        asked.clear()
        answers[:] = [
            ElicitResult(action="accept", content={"description": "night train"}),
            ElicitResult(action="accept", content={"confirm": True}),
        ]
        renamed = await client.call_tool("rename_expense", {"id": expense})
        check(renamed.content[0].text == 'renamed to "night train"', renamed.content)
        check(asked == ['Rename "train" to?', 'Rename "train" to "night train"?'], asked)

        category = await client.call_tool("categorize_expense", {"description": "a ticket"})
        check(category.content[0].text == "travel", category.content)

        # The sealed state binds the answers to the call: other arguments, or a forged state, are refused.
        first = await client.session.call_tool("split_expense", {"id": expense}, allow_input_required=True)
        check(isinstance(first, InputRequiredResult) and list(first.input_requests) == ["question_1"], first)
        answer = {"question_1": {"action": "accept", "content": {"people": 2}}}
        forged = json.loads(first.request_state)
        forged["mac"] = [0] * len(forged["mac"])
        for arguments, state in (({"id": expense + 1}, first.request_state), ({"id": expense}, json.dumps(forged))):
            try:
                await client.session.call_tool("split_expense", arguments, input_responses=answer, request_state=state)
                check(False, f"a retry with {arguments} and a bad state ran")
            except MCPError as error:
                check(error.error.code == -32602, error.error)
        retried = await client.session.call_tool(
            "split_expense", {"id": expense}, input_responses=answer, request_state=first.request_state
        )
        check(retried.content[0].text == "2 shares of 1050 cents", retried.content)


async def refused(target, mode):
    async with Client(target, mode=mode) as client:
        await client.call_tool("add_expense", {"description": "x", "cents": 1, "category": "food"})
        for name, arguments in (("split_expense", {"id": 1}), ("categorize_expense", {"description": "x"})):
            started = time.monotonic()
            result = await asyncio.wait_for(client.call_tool(name, arguments), timeout=ANSWER_WITHIN_S)
            check(result.is_error and result.content[0].text.startswith("error 1020:"), result.content)
            check(time.monotonic() - started < ANSWER_WITHIN_S, "answered at once")


class HttpServer:
    """`mcp_server --http 127.0.0.1:0`; its URL read from the line it prints once listening."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "--http", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        match = re.search(r"at (http://\S+)", line)
        check(match is not None, f"no URL: {line}")
        self.url = match.group(1)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=40)


async def main(binary):
    stdio = StdioServerParameters(command=binary, args=[])
    await talks(stdio)
    await refused(stdio, "legacy")
    await refused(stdio, "auto")
    await stateless(stdio)
    http = HttpServer(binary)
    try:
        await talks(http.url)
        await refused(http.url, "legacy")
        await stateless(http.url)
    finally:
        http.stop()
    print(
        "ok: the Python SDK on stdio and over HTTP: logs, progress, a typed elicitation and "
        "sampling (legacy mode: requests during the call; 2026-07-28: input-required results, "
        "two rounds, a forged retry refused); without callbacks, 1020 at once"
    )


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
