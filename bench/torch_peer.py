"""PyTorch peer timings for docs/benchmarks.md, same shapes and dtypes as the npusim runs.

ResNet-50 batch 1 fp16 (torchvision, eager); Qwen2.5-1.5B (architecture from its config, random
bf16 weights): prefill of 128 tokens (eager) and one decode step with a 2048-entry static KV cache
at position 128, eager through HF transformers and, as a lower bound, a minimal hand-written decode
step in eager mode and as a CUDA-graph replay. Wall time per call with a device synchronisation,
median of many after warm-up. Prints one line per measurement: PEER <name> <ms>.
Arguments pick sections (default all): resnet, hf (transformers prefill/decode), minimal (the
hand-written decode step, eager and CUDA graph).
"""
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
only = set(sys.argv[1:])


def wanted(section):
    return not only or section in only


def bench(fn, warm=10, iters=50):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1000.0)
    ts.sort()
    return ts[len(ts) // 2]


def report(name, fn, **kw):
    try:
        ms = bench(fn, **kw)
        print(f"PEER {name} {ms:.3f}", flush=True)
    except Exception as e:  # keep the other measurements
        print(f"PEER {name} n/a ({type(e).__name__}: {str(e)[:200]})", flush=True)


print("torch", torch.__version__, "on", torch.cuda.get_device_name(0), flush=True)

# ---- ResNet-18/50 fp16: batch 1 (eager and CUDA-graph replay), batch 32 throughput --------------
def graphed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


try:
    if not wanted("resnet"):
        raise ImportError("section not asked for")
    import torchvision

    for name in ("resnet18", "resnet50"):
        m = getattr(torchvision.models, name)(weights=None).to(dev).half().eval()
        x = torch.randn(1, 3, 224, 224, device=dev).half()
        with torch.inference_mode():
            report(f"{name}_f16_b1_eager", lambda: m(x), warm=20, iters=100)
            report(f"{name}_f16_b1_cudagraph", graphed(lambda: m(x)), warm=20, iters=200)
            # Batch 32, channels-last, cuDNN autotuning: images per second = 32000 / ms.
            torch.backends.cudnn.benchmark = True
            mc = m.to(memory_format=torch.channels_last)
            xb = torch.randn(32, 3, 224, 224, device=dev).half().to(memory_format=torch.channels_last)
            report(f"{name}_f16_b32_channels_last_eager", lambda: mc(xb), warm=20, iters=50)
            torch.backends.cudnn.benchmark = False
        del m
except Exception as e:
    print("PEER resnet n/a", e, flush=True)

# ---- Qwen2.5-1.5B bf16 --------------------------------------------------------------------------
H, I, L, NH, NKV, D, V, CACHE, POS = 1536, 8960, 28, 12, 2, 128, 151936, 2048, 128
try:
    if not wanted("hf"):
        raise ImportError("section not asked for")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=H, intermediate_size=I, num_hidden_layers=L, num_attention_heads=NH, num_key_value_heads=NKV,
                      vocab_size=V, max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=True)
    with torch.device(dev):
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, V, (1, POS), device=dev)
    with torch.inference_mode():
        report("qwen15_prefill128_bf16_eager", lambda: model(ids, use_cache=False), warm=5, iters=20)
        try:
            from transformers import StaticCache

            try:
                cache = StaticCache(config=cfg, max_cache_len=CACHE)
            except TypeError:
                cache = StaticCache(config=cfg, max_batch_size=1, max_cache_len=CACHE, device=dev, dtype=torch.bfloat16)
            model(ids, past_key_values=cache, cache_position=torch.arange(POS, device=dev), use_cache=True)
            tok = torch.randint(0, V, (1, 1), device=dev)
            cp = torch.tensor([POS], device=dev)
            report("qwen15_decode_bf16_kv2048_hf_eager",
                   lambda: model(tok, past_key_values=cache, cache_position=cp, position_ids=cp.view(1, 1), use_cache=True), warm=10, iters=50)
        except Exception as e:
            print("PEER qwen15_decode_bf16_kv2048_hf_eager n/a", type(e).__name__, str(e)[:300], flush=True)
    del model
    torch.cuda.empty_cache()
except Exception as e:
    print("PEER qwen15 (transformers) n/a", type(e).__name__, str(e)[:300], flush=True)

# A minimal Qwen2 decode step (same math: RMSNorm, q/k/v with bias, rotate-half RoPE, GQA attention
# over the whole 2048-entry cache with an additive mask, SiLU MLP, tied lm_head).
try:
    if not wanted("minimal"):
        raise ImportError("section not asked for")
    g = torch.Generator(device=dev).manual_seed(0)

    def w(*s):
        return (torch.randn(*s, device=dev, generator=g) * 0.02).to(torch.bfloat16)

    emb = w(V, H)
    layers = [dict(ln1=torch.ones(H, device=dev, dtype=torch.bfloat16), q=w(H, H), qb=w(H), k=w(NKV * D, H), kb=w(NKV * D), v=w(NKV * D, H),
                   vb=w(NKV * D), o=w(H, H), ln2=torch.ones(H, device=dev, dtype=torch.bfloat16), gate=w(I, H), up=w(I, H), down=w(H, I),
                   kc=torch.zeros(1, NKV, CACHE, D, device=dev, dtype=torch.bfloat16), vc=torch.zeros(1, NKV, CACHE, D, device=dev, dtype=torch.bfloat16))
              for _ in range(L)]
    normf = torch.ones(H, device=dev, dtype=torch.bfloat16)
    inv = 1.0 / (1e6 ** (torch.arange(0, D, 2, device=dev, dtype=torch.float32) / D))

    def rms(x, wt):
        xf = x.float()
        return wt * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    def rot(x):
        return torch.cat((-x[..., D // 2:], x[..., : D // 2]), -1)

    tok = torch.randint(0, V, (1, 1), device=dev)
    pos = torch.tensor([POS], device=dev)
    mask = torch.full((1, 1, 1, CACHE), torch.finfo(torch.bfloat16).min, device=dev, dtype=torch.bfloat16)
    mask[..., : POS + 1] = 0

    def step():
        h = emb[tok]
        f = pos.float()[:, None] * inv[None]
        e = torch.cat((f, f), -1)
        cos, sin = e.cos().to(torch.bfloat16)[None, None], e.sin().to(torch.bfloat16)[None, None]
        for p in layers:
            x = rms(h, p["ln1"])
            q = torch.nn.functional.linear(x, p["q"], p["qb"]).view(1, 1, NH, D).transpose(1, 2)
            k = torch.nn.functional.linear(x, p["k"], p["kb"]).view(1, 1, NKV, D).transpose(1, 2)
            v = torch.nn.functional.linear(x, p["v"], p["vb"]).view(1, 1, NKV, D).transpose(1, 2)
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            p["kc"].index_copy_(2, pos, k)
            p["vc"].index_copy_(2, pos, v)
            a = torch.nn.functional.scaled_dot_product_attention(q, p["kc"], p["vc"], attn_mask=mask, enable_gqa=True)
            h = h + torch.nn.functional.linear(a.transpose(1, 2).reshape(1, 1, H), p["o"])
            x = rms(h, p["ln2"])
            h = h + torch.nn.functional.linear(torch.nn.functional.silu(torch.nn.functional.linear(x, p["gate"])) * torch.nn.functional.linear(x, p["up"]), p["down"])
        return torch.nn.functional.linear(rms(h, normf), emb)

    with torch.inference_mode():
        report("qwen15_decode_bf16_kv2048_minimal_eager", step, warm=10, iters=50)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        report("qwen15_decode_bf16_kv2048_minimal_cudagraph", graph.replay, warm=10, iters=100)
except Exception as e:
    print("PEER qwen15 minimal n/a", type(e).__name__, str(e)[:300], flush=True)
sys.exit(0)
