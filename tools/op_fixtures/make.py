"""Exports op fixture cases with PyTorch's outputs, on the GPU machine (torch there):

    PYTHONPATH=.devdeps/pyir:.devdeps:tools/op_fixtures python3 tools/op_fixtures/make.py OUT moe40 ops40

Each named module (tools/op_fixtures/NAME.py) has cases() in the format of op_cases_extra() of the
fixtures' make_fixtures.py (.devdeps/make_fixtures.py, copied there from ../shared/fixtures), whose
make_op_cases() writes OUT/<case>/ (ir.json, io.safetensors, weights and synth.json when the case
has weights, meta.json). Copy the folders into tests/data/ops/; the fixture tests find them there.
"""

import importlib
import os
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, names = argv[1], argv[2:]
    import torch

    import make_fixtures as mf
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    mf.check_synth()
    os.makedirs(out, exist_ok=True)
    for name in names:
        mod = importlib.import_module(name)
        cases = mod.cases()
        print(f"{name}: {len(cases)} cases on {dev}", flush=True)
        mf.make_op_cases(out, dev, cases)
    with open(os.path.join(out, "make_fixtures.log"), "w") as f:
        f.write("\n".join(mf.LOG) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
