"""Peer side of bench/bench_dynamic_cuda.cpp (issue 17): BERT-base over varying sequence lengths.

  export_tiny DIR            the same with 2 layers of width 64 (for the importer's tests)
  export DIR                 BERT-base (seeded random weights, eager attention) exported by PyTorch's
                             TorchScript exporter with dynamic axes (batch, sequence) to DIR/bert_dyn.onnx
  compile LENGTHS BATCH      torch.compile (default backend, an empty compile cache) called once per
                             length (comma-separated), batch BATCH: prints a JSON line per call and the sum
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def export(out_dir, tiny=False):
    import torch
    from latency_torch import bert_model, bert_outputs
    os.makedirs(out_dir, exist_ok=True)
    if tiny:  # the same graph at a small size (tests of the importer): 2 layers of width 64
        from transformers import BertConfig, BertModel
        torch.manual_seed(0)
        m = BertModel(BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                                 attn_implementation="eager")).eval()
    else:
        m = bert_model("eager")
    ids = torch.randint(0, 30522, (1, 128), generator=torch.Generator().manual_seed(1))
    path = os.path.join(out_dir, "bert_dyn.onnx")
    with torch.no_grad():
        torch.onnx.export(bert_outputs(m), (ids,), path, input_names=["input_ids"],
                          output_names=["last_hidden_state", "pooler_output"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "last_hidden_state": {0: "batch", 1: "sequence"},
                                        "pooler_output": {0: "batch"}})
    print(json.dumps({"exported": path}), flush=True)


def compile_calls(lengths, batch):
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))
    import torch
    from latency_torch import bert_model
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    m = bert_model().cuda()
    f = torch.compile(m)
    total = 0.0
    for n in lengths:
        ids = torch.randint(0, 30522, (batch, n), device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            f(input_ids=ids).last_hidden_state.cpu()
        ms = (time.perf_counter() - t0) * 1e3
        total += ms
        print(json.dumps({"mode": f"torch.compile first call seq {n}", "ms": ms}), flush=True)
    print(json.dumps({"mode": "torch.compile first calls, sum", "ms": total}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] in ("export", "export_tiny"):
        export(sys.argv[2], tiny=sys.argv[1] == "export_tiny")
    elif sys.argv[1] == "compile":
        compile_calls([int(x) for x in sys.argv[2].split(",")], int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
