"""`python -m benchmarks`: the suite's speed claims (benchmarks/claims/) listed, measured, published.

  python -m benchmarks list                       every claim, its topic and sentence
  python -m benchmarks run NAME... [--quick]      measure these claims into benchmarks/results/claims/DEVICE/
  python -m benchmarks run --all [--quick]        every claim (--quick: seconds each, to find one that broke)
  python -m benchmarks publish [--check] [--allow-dirty]
                                                  docs/PERFORMANCE.md's claims table from the records; a record
                                                  of an older schema or claim version, or of uncommitted code
                                                  (without --allow-dirty), is refused
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.claims import load_all, runner
    from benchmarks.claims import publish as pages
    from l40sbench.errors import UserError

    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("list", help="every claim, its topic and sentence")
    run = sub.add_parser("run", help="measure claims, each in a process of its own, one record each")
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--all", action="store_true", help="every claim")
    run.add_argument("--quick", action="store_true", help="the claims' quick sizes: seconds each; not publishable")
    run.add_argument("--output-dir", type=Path, default=runner.RESULTS,
                     help="where the records go, a folder per device (default: benchmarks/results/claims/)")
    run.add_argument("--anyway", action="store_true", help="time on a busy host too (the record says not quiet)")
    check = sub.add_parser("publish", help="write docs/PERFORMANCE.md's claims table from the records")
    check.add_argument("--check", action="store_true", help="only say whether the page holds what publish writes")
    check.add_argument("--allow-dirty", action="store_true",
                       help="publish records measured on uncommitted code, each row marked so")
    check.add_argument("--records", type=Path, default=runner.RESULTS,
                       help="where the records are, a folder per device (default: benchmarks/results/claims/)")
    one = sub.add_parser("_one")  # the child runner.run starts per claim
    one.add_argument("name")
    one.add_argument("sizes")
    one.add_argument("out")
    args = parser.parse_args(argv)
    try:
        if args.verb == "list":
            claims = load_all()
            for name in claims.names():
                claim = claims.get(name)
                print(f"{name:16} {claim.topic:12} {claim.sentence}")
            print(f"{len(claims.names())} claims")
        elif args.verb == "run":
            if args.all == bool(args.names):
                raise UserError("run takes claim names or --all, one of them")
            names = load_all().names() if args.all else args.names
            runner.run(names, args.quick, args.output_dir, args.anyway, _log)
        elif args.verb == "publish":
            if args.check:
                same = pages.published() == pages.table(args.records, args.allow_dirty)
                print("docs/PERFORMANCE.md holds the table the records give" if same else
                      "docs/PERFORMANCE.md differs from the records: python -m benchmarks publish")
                return 0 if same else 1
            changed = pages.publish(results=args.records, allow_dirty=args.allow_dirty)
            print("docs/PERFORMANCE.md " + ("written" if changed else "already held the records' table"))
        else:
            runner.one(args.name, args.sizes, args.out)
    except UserError as exc:
        print(f"python -m benchmarks: error: {exc}", file=sys.stderr)
        return 2
    except runner.ClaimFailed as exc:
        print(f"python -m benchmarks: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
