"""Figure 13: a decision model beside a chat model on the same rows (issue 61): calls, tokens and
USD per 1,000 rows, and rows per second at the same latency and concurrency.

N rows (default 1,000), each with a request, one passage, a response and two expected facts,
judged for sufficiency and completeness against the fake server (its own process, a fixed
latency L, concurrency C) by three judges: the chat protocol (``openai/fake-judge``, one
text-writing call per metric, priced as gpt-4o-mini's $0.15 / $0.60 per million input / output
tokens through ``judge.price``: the fake has no price of its own), OpenAI Decisions
(``openai-decisions/gpt-6-luna``, $0.10 / M input) and System One (``systemone/jev-latest``,
$0.042 / M input). A decision model asks both metrics of a row in one request. The fake's
token counts are its own (characters / 4 for the decision APIs), not a provider's tokenizer:
compare the calls and the shape, not the cents.

    python bench/decisions.py [--rows 1000] [--latency 0.1] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import time

from _common import fake_server, machine

JUDGES = [("chat: openai/fake-judge", "openai/fake-judge", {"price": {"input_per_mtok": 0.15, "output_per_mtok": 0.60}}),
          ("decisions: openai-decisions/gpt-6-luna", "openai-decisions/gpt-6-luna", {}),
          ("System One: systemone/jev-latest", "systemone/jev-latest", {})]
METRICS = ["sufficiency", "completeness"]


def rows(n: int):
    import pandas as pd

    return pd.DataFrame([{"id": f"row-{i}", "request": f"Where is landmark {i} and when was it built?",
                          "context": [f"Landmark {i} stands in city {i}. It was built in {1800 + i % 200}. "
                                      "The archive records trade, weather and harvests for each season."],
                          "response": f"Landmark {i} is in city {i}.",
                          "expected_facts": [f"landmark {i} is in city {i}", f"landmark {i} was built in {1800 + i % 200}"]}
                         for i in range(n)])


def run(url: str, model: str, judge: dict, frame, concurrency: int) -> dict:
    from ragjudge.scoring import Scorer

    settings = {"concurrency": concurrency, **judge}
    with Scorer(metrics=METRICS, model=model, api_base=url, cache={"enabled": False}, judge=settings) as scorer:
        start = time.perf_counter()
        scored = scorer.score(frame)
        seconds = time.perf_counter() - start
        calls = scorer.model.calls
    out = scored.frame
    n = len(out)
    per = 1000 / n
    ok = all((out[f"{m}_status"] == "ok").all() for m in METRICS)
    return {
        "ok": ok,
        "calls": calls * per,
        "input": sum(int(out[f"{m}_prompt_tokens"].sum()) for m in METRICS) * per,
        "output": sum(int(out[f"{m}_completion_tokens"].sum()) for m in METRICS) * per,
        "usd": sum(float(out[f"{m}_cost_usd"].sum()) for m in METRICS) * per,
        "rows_per_s": n / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    import os

    for name in ("OPENAI_API_KEY", "TYPESAFE_API_KEY"):  # the fake server takes any key
        os.environ.setdefault(name, "sk-bench-not-a-key")
    frame = rows(args.rows)
    print(f"# figure 13: {args.rows} rows x {', '.join(METRICS)}, fake server at {args.latency * 1000:g} ms, concurrency "
          f"{args.concurrency}; {machine()}")
    print(f"{'judge':40} {'calls/1k':>9} {'input tok/1k':>13} {'output tok/1k':>14} {'USD/1k':>9} {'rows/s':>8}")
    with fake_server(args.latency) as url:
        for label, model, judge in JUDGES:
            figures = run(url, model, judge, frame, args.concurrency)
            flag = "" if figures["ok"] else "  (some rows not ok)"
            print(f"{label:40} {figures['calls']:9.0f} {figures['input']:13.0f} {figures['output']:14.0f} {figures['usd']:9.4f} "
                  f"{figures['rows_per_s']:8.1f}{flag}")


if __name__ == "__main__":
    main()
