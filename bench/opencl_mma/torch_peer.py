# PyTorch peer for mma_bench: torch.matmul(A, W.t()) in bf16 (cuBLAS, bf16 out, fp32 accumulate) on the
# same shapes, CUDA events, median of 30 after warm-up, rotating over input sets larger than L2.
import torch
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
print("torch", torch.__version__, torch.cuda.get_device_name(0))
for M, K, N in [(4096, 4096, 4096), (128, 1536, 1536), (128, 1536, 256), (128, 1536, 8960), (128, 8960, 1536), (128, 1536, 151936)]:
    per = (M * K + N * K) * 2
    nsets = min(8, max(1, (256 << 20) // per + 1))
    sets = [(torch.empty(M, K, device="cuda").uniform_(-1, 1).bfloat16(), torch.empty(N, K, device="cuda").uniform_(-1, 1).bfloat16()) for _ in range(nsets)]
    a, w = sets[0]
    ref = a.double() @ w.double().t()
    out = torch.matmul(a, w.t())
    rel = ((out.double() - ref).norm() / ref.norm()).item()
    for i in range(10):
        a, w = sets[i % nsets]; torch.matmul(a, w.t())
    ts = []
    for i in range(30):
        a, w = sets[i % nsets]
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); torch.matmul(a, w.t()); e1.record(); e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    ts.sort(); ms = ts[len(ts) // 2]
    print(f"PEER {M}x{K}x{N} torch.matmul_bf16 {ms:.4f} ms {2*M*N*K/ms/1e9:.1f} TFLOP/s rel_l2 {rel:.2e}")
