"""python3 -m tensorgraph.torch --list-ops: the coverage table of docs/torch.md."""
import sys

from ._registry import supported_ops_markdown

if __name__ == "__main__":
    if sys.argv[1:] != ["--list-ops"]:
        sys.exit("usage: python3 -m tensorgraph.torch --list-ops")
    sys.stdout.write(supported_ops_markdown())
