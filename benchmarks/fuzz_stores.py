"""Mutation fuzz campaign over real ZV stores, from the command line.

Run: ``python benchmarks/fuzz_stores.py --cases N --seed S [--jobs J] [--out report.json]``.
The campaign itself (mutations, reads, the wrong-data oracle, the report) is
``tests/fuzz_campaign.py``, which the test suite runs a short campaign of.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the campaign and the fixture stores

from fuzz_campaign import campaign, default_stores, prepare, run_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=None, help="stop after this many s")
    ap.add_argument("--memory-limit-gb", type=float, default=6.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fuzz_stores.json")
    ap.add_argument(
        "--recheck-slow",
        action="store_true",
        help="time every slow case again, alone, after the campaign (separates slow reads "
        "from CPU contention on a shared machine)",
    )
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.jobs <= 1 and args.memory_limit_gb:
        limit = int(args.memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    report = campaign(
        args.cases,
        args.seed,
        max(args.jobs, 2) if args.jobs > 1 else 1,
        time_limit=args.time_limit,
        memory_limit_gb=args.memory_limit_gb,
        progress_dir=args.out.parent,
    )
    if args.recheck_slow and report.slow:
        work = Path(tempfile.mkdtemp(prefix="zv_fuzz_recheck_"))
        try:
            stores = prepare(work, default_stores())
            for r in report.slow:
                again = run_case(r.index, args.seed, stores)
                report.rechecked.append((again.case, again.seconds))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    out = report.as_dict()
    out["seed"] = args.seed
    out["requested_cases"] = args.cases
    args.out.write_text(json.dumps(out, indent=1))
    lists = ("escaped_cases", "slow_cases", "silent_cases", "unexplained_cases")
    print(json.dumps({k: v for k, v in out.items() if k not in lists}, indent=1))
    for r in report.escaped[:5]:
        print(f"\n--- {r.case}: {r.outcome}\n{r.error}")
    for r in report.unexplained[:10]:
        print(f"\n--- {r.case}: silent, {r.error}")
    slow = report.slow if not args.recheck_slow else [t for _, t in report.rechecked if t > 2]
    return 1 if report.escaped or report.unexplained or slow else 0


if __name__ == "__main__":
    sys.exit(main())
