"""``mlpl-lab store [--clear]`` lists (or deletes) the stored runs."""
from __future__ import annotations


def add_parser(sub) -> None:
    st = sub.add_parser("store", help="list the stored runs (or --clear them)")
    st.add_argument("--clear", action="store_true", help="delete every stored run")
    st.set_defaults(func=cmd_store)


def cmd_store(args) -> int:
    from ..runs.store import RunStore

    store = RunStore()
    if args.clear:
        n = store.clear()
        print(f"removed {n} stored runs from {store.root}")
        return 0
    import json

    keys = list(store.keys())
    print(f"{len(keys)} runs in {store.root}")
    for k in keys:
        try:
            s = json.loads((store.root / k / "summary.json").read_text())
            env = s.get("environment") or {}
            print(f"  {k}  {s.get('describe', '?')}  test mAP {s.get('test_mAP', float('nan')):.2f}  "
                  f"{s.get('seconds', 0):.0f} s  [torch {env.get('torch', '?')}, {env.get('device', '?')}, "
                  f"AMP {env.get('amp_dtype', '?')}, {env.get('world_size', '?')} process(es)]")
        except (OSError, ValueError, TypeError) as exc:
            print(f"  {k}  damaged ({type(exc).__name__}: {exc}); it is retrained when next needed")
    return 0
