#!/usr/bin/env python3
"""Real models exported by PyTorch's ONNX exporters, run by `tg run`, against ONNX Runtime.

For the GPU machine (PyTorch 2.x, transformers, onnx, onnxruntime there; none of them is needed
by the build or CI). Each model is a Hugging Face architecture at a small random-weight
configuration (or a torchvision model), exported with the TorchScript exporter (dynamo=False,
opset 17) and, where onnxscript is installed, with the dynamo exporter (opset 18); ONNX Runtime's
CPU result is the reference. `tg run` runs each file on the CPU and on cuda (f32 arithmetic) and
the script prints one line per (model, exporter, device): the max relative error
(max |tg - ort| / max |ort|) of every output, or the first line of the error.

Usage: python3 scripts/hf-onnx-check.py --tg /path/to/tg [--out DIR] [--models bert,gpt2,...]
"""
import argparse
import os
import subprocess
import sys
import time
import traceback

import numpy as np


def hf_models():
    import torch
    import transformers as tf

    def text(cfg_cls, model_cls, vocab=1000, seq=16, **cfg):
        def make():
            cfg_obj = cfg_cls(vocab_size=vocab, **cfg)
            model = model_cls(cfg_obj).eval()
            ids = torch.randint(0, vocab, (2, seq), dtype=torch.int64)
            mask = torch.ones(2, seq, dtype=torch.int64)
            mask[1, seq - 3:] = 0  # padding in the second sequence: masks matter
            return model, {"input_ids": ids, "attention_mask": mask}
        return make

    def image(cfg_cls, model_cls, size=32, **cfg):
        def make():
            model = model_cls(cfg_cls(**cfg)).eval()
            return model, {"pixel_values": torch.randn(2, cfg.get("num_channels", 3), size, size)}
        return make

    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    return {
        "bert": text(tf.BertConfig, tf.BertModel, **small),
        "roberta": text(tf.RobertaConfig, tf.RobertaModel, max_position_embeddings=64, **small),
        "distilbert": text(tf.DistilBertConfig, tf.DistilBertModel, dim=64, n_layers=2, n_heads=4,
                           hidden_dim=128),
        "gpt2": text(tf.GPT2Config, tf.GPT2LMHeadModel, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                     use_cache=False),
        "llama": text(tf.LlamaConfig, tf.LlamaForCausalLM, num_key_value_heads=2, use_cache=False, **small),
        "t5enc": text(tf.T5Config, tf.T5EncoderModel, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                      num_heads=4),
        "clip_text": text(tf.CLIPTextConfig, tf.CLIPTextModel, max_position_embeddings=64, **small),
        "vit": image(tf.ViTConfig, tf.ViTModel, image_size=32, patch_size=8, **small),
        "convnext": image(tf.ConvNextConfig, tf.ConvNextModel, size=64, hidden_sizes=[16, 32, 64, 128],
                          depths=[1, 1, 1, 1]),
        "resnet_hf": image(tf.ResNetConfig, tf.ResNetModel, size=64, hidden_sizes=[16, 32, 64, 128],
                           depths=[1, 1, 1, 1], embedding_size=16),
        "whisper_enc": lambda: (lambda m: (m.get_encoder().eval(),
                                           {"input_features": torch.randn(1, 80, 3000)}))(
            tf.WhisperModel(tf.WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=1,
                                             encoder_attention_heads=4, decoder_attention_heads=4,
                                             encoder_ffn_dim=128, decoder_ffn_dim=128)).eval()),
    }


def export(model, inputs, path, dynamo):
    import torch
    names = list(inputs)
    args = tuple(inputs[n] for n in names)

    class Wrap(torch.nn.Module):  # keyword inputs, tuple outputs
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            out = self.m(**dict(zip(names, a)))
            if hasattr(out, "to_tuple"):
                out = out.to_tuple()
            return out if isinstance(out, tuple) else (out,)

    w = Wrap(model).eval()
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(w, args, path, input_names=names, dynamo=True, opset_version=18)
        else:
            torch.onnx.export(w, args, path, input_names=names, opset_version=17, dynamo=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tg", required=True)
    ap.add_argument("--out", default="/tmp/hf-onnx")
    ap.add_argument("--models", default="")
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--exporters", default="script,dynamo")
    a = ap.parse_args()
    import torch
    import onnxruntime as ort
    torch.manual_seed(0)
    os.makedirs(a.out, exist_ok=True)
    models = hf_models()
    try:
        import torchvision
        models["r3d_18"] = lambda: (torchvision.models.video.r3d_18().eval(), {"x": torch.randn(1, 3, 8, 64, 64)})
        models["deeplabv3"] = lambda: (torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights_backbone=None, aux_loss=False).eval(), {"x": torch.randn(1, 3, 96, 96)})
    except ImportError:
        pass
    chosen = [m for m in a.models.split(",") if m] or list(models)
    try:
        import onnxscript  # noqa: F401  the dynamo exporter needs it
        have_dynamo = True
    except ImportError:
        have_dynamo = False
    rows = []

    class Rows(list):
        def append(self, row):
            super().append(row)
            print(row, flush=True)
    rows = Rows()
    for name in chosen:
        try:
            model, inputs = models[name]()
        except Exception as e:  # noqa: BLE001
            rows.append(f"{name:12s} build failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            continue
        for exporter in a.exporters.split(","):
            if exporter == "dynamo" and not have_dynamo:
                continue
            tag = f"{name:12s} {exporter:6s}"
            d = os.path.join(a.out, f"{name}-{exporter}")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "model.onnx")
            try:
                export(model, inputs, path, exporter == "dynamo")
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                feed_names = [i.name for i in sess.get_inputs()]
                feeds = {n: inputs[n].numpy() if n in inputs else list(inputs.values())[k].numpy()
                         for k, n in enumerate(feed_names)}
                ref = sess.run(None, feeds)
                files = []
                for n in feed_names:
                    f = os.path.join(d, f"in_{n}.npy")
                    np.save(f, feeds[n])
                    files.append(f"{n}={f}")
            except Exception as e:  # noqa: BLE001
                rows.append(f"{tag} export/ort failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            for dev in a.devices.split(","):
                od = os.path.join(d, f"out-{dev}")
                t0 = time.time()
                p = subprocess.run([a.tg, "run", path, *files, "--device", dev, "-o", od],
                                   capture_output=True, text=True, timeout=300)
                dt = time.time() - t0
                if p.returncode != 0:
                    err = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
                    rows.append(f"{tag} {dev:4s} FAILED ({dt:.1f} s): {err[:220]}")
                    continue
                errs = []
                for o, r in zip(sess.get_outputs(), ref):
                    f = os.path.join(od, "".join(c if c.isalnum() or c in "-_." else "_" for c in o.name) + ".npy")
                    if not os.path.exists(f):
                        errs.append(f"{o.name}: missing")
                        continue
                    g = np.load(f)
                    if g.shape != r.shape:
                        errs.append(f"{o.name}: shape {g.shape} vs {r.shape}")
                        continue
                    if r.dtype.kind in "iub":
                        errs.append(f"{o.name}: {'equal' if np.array_equal(g, r) else 'DIFFERENT'}")
                    else:
                        scale = max(float(np.abs(r).max()), 1e-12)
                        errs.append(f"{float(np.abs(g.astype(np.float64) - r).max()) / scale:.1e}")
                rows.append(f"{tag} {dev:4s} ok ({dt:.1f} s): " + " ".join(errs[:6]))
    print("\n== summary ==")
    print("\n".join(rows))


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
