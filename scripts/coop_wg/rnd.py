# How the workgroup-scope kernel rounds its 16-bit outputs: integer products whose exact sums need
# rounding; counts outputs equal to round-to-nearest-even, to round-toward-zero, and neither.
import torch, vkml_torch, os
g = torch.Generator().manual_seed(7)
for dt, hi in ((torch.float16, 33), (torch.bfloat16, 17)):
    for m, k, n in ((256, 128, 256), (130, 96, 70)):
        a = torch.randint(-hi, hi, (m, k), generator=g).to(dt); b = torch.randint(-hi, hi, (k, n), generator=g).to(dt)
        e = a.double() @ b.double()
        rne = e.float().to(dt)
        over = rne.double().abs() > e.abs()
        bits = rne.view(torch.int16).clone(); bits[over] -= 1
        rtz = bits.view(dt)
        torch.vkml.synchronize()
        with vkml_torch.profile() as p:
            got = (a.to("vkml") @ b.to("vkml")).cpu()
        names = [k[0] for k in p.kernels if "gemm" in k[0]]
        eq_rne = (got == rne).float().mean().item(); eq_rtz = (got == rtz).float().mean().item()
        print(os.environ.get("VKML_GEMM_PIPE", ""), dt, m, names, f"rne {eq_rne:.3f} rtz {eq_rtz:.3f} neither {((got != rne) & (got != rtz)).float().mean().item():.3f}")
