"""Chapter 2 against published figures: link rates (and which direction they count), deployments.

Each expected value is the publisher's number as printed (or the product the publisher states,
e.g. 18 links x 25 GB/s), with its source; the code's own output never appears here. The
tolerance says how close chalk must come; a comment justifies any above 0.5%.
"""
import pytest

from chalk import hardware, models, moe, systems

NVLINK = "https://www.nvidia.com/en-us/data-center/nvlink/"


def chip(name):
    return hardware.get(name)


def system(name):
    return systems.get(name)


# (id, computed, published, relative tolerance, citation)
FIGURES = [
    # --- the per-direction convention, pinned from both sides -----------------------------------
    ("H100 NVLink 4 per direction", lambda: chip("H100-SXM").scale_up_bandwidth, 18 * 25e9, 0.0,
     "NVIDIA Hopper architecture whitepaper (2022): 18 fourth-generation NVLink links per H100, "
     "each 25 GB/s in each direction"),
    ("H100 NVLink 4 total", lambda: chip("H100-SXM").scale_up_bandwidth_bidirectional, 900e9, 0.0,
     f"{NVLINK}: fourth-generation NVLink, 900 GB/s bidirectional per GPU"),
    ("A100 NVLink 3 total", lambda: chip("A100-80GB").scale_up_bandwidth_bidirectional, 600e9, 0.0,
     "NVIDIA A100 datasheet: NVLink 600 GB/s (12 links x 25 GB/s per direction, both ways)"),
    ("GB200 NVLink 5 per GPU", lambda: chip("GB200").scale_up_bandwidth_bidirectional, 1.8e12, 0.0,
     f"{NVLINK}: fifth-generation NVLink, 1.8 TB/s bidirectional per GPU"),
    # 72 x 1.8 TB/s = 129.6 TB/s, which NVIDIA rounds to 130.
    ("GB200 NVL72 NVLink", lambda: system("gb200-nvl72").scale_up_bandwidth_bidirectional, 130e12, 0.005,
     "nvidia.com/en-us/data-center/gb200-nvl72/: NVLink bandwidth 130 TB/s"),
    # 72 x 3.6 TB/s = 259.2 TB/s, announced as 260.
    ("Vera Rubin NVL72 NVLink", lambda: system("vera-rubin-nvl72").scale_up_bandwidth_bidirectional, 260e12, 0.005,
     "NVIDIA CES 2026 (Vera Rubin NVL72) as restated by silicontales.com: NVLink 6, 260 TB/s per rack"),
    ("ConnectX-7 per direction", lambda: chip("H100-SXM").scale_out_bandwidth, 400e9 / 8, 0.0,
     "NVIDIA ConnectX-7 datasheet: 400 Gb/s per port; DGX H100 SuperPOD: one per GPU"),
    ("ConnectX-8 per direction", lambda: chip("GB300").scale_out_bandwidth, 800e9 / 8, 0.0,
     "verda.com GB300 NVL72 architecture: one ConnectX-8 SuperNIC, 800 Gb/s, per GPU"),
    ("TPU v5e ICI bidirectional", lambda: chip("TPU-v5e").scale_up_bandwidth_bidirectional, 400e9, 0.0,
     "docs.cloud.google.com/tpu/docs/v5e: bidirectional inter-chip interconnect (ICI) bandwidth "
     "(per chip) 400 GBps"),
    # The page's earlier version printed one direction, in bits: 1,600 Gbps = 200 GB/s.
    ("TPU v5e ICI per direction", lambda: chip("TPU-v5e").scale_up_bandwidth, 1600e9 / 8, 0.0,
     "cloud.google.com/tpu/docs/v5e (2023 version): Interchip Interconnect BW 1600 Gbps"),
    ("TPU v5p ICI bidirectional", lambda: chip("TPU-v5p").scale_up_bandwidth_bidirectional, 1200e9, 0.0,
     "docs.cloud.google.com/tpu/docs/v5p: bidirectional ICI bandwidth per chip 1200 GBps"),
    ("TPU v5p ICI per direction", lambda: chip("TPU-v5p").scale_up_bandwidth, 4800e9 / 8, 0.0,
     "cloud.google.com/tpu/docs/v5p (earlier version): Interchip Interconnect BW 4800 Gbps"),
    ("TPU v5p DCN per chip", lambda: chip("TPU-v5p").scale_out_bandwidth, 50e9 / 8, 0.0,
     "docs.cloud.google.com/tpu/docs/v5p: data center network (DCN) bandwidth per chip 50 Gbps"),
    ("TPU v5e DCN per chip", lambda: chip("TPU-v5e").scale_out_bandwidth, 2 * 100e9 / 8 / 8, 0.0,
     "docs.cloud.google.com/tpu/docs/v5e: per-host NIC 2 x 100 Gbps, 8 chips per host"),
    ("Ironwood ICI bidirectional", lambda: chip("TPU-v7").scale_up_bandwidth_bidirectional, 1.2e12, 0.0,
     "blog.google, Ironwood announcement (2025-04-09): ICI bandwidth 1.2 TBps bidirectional"),
    ("MI300X Infinity Fabric", lambda: chip("MI300X").scale_up_bandwidth_bidirectional, 896e9, 0.0,
     "AMD MI300X launch as restated by wheelersnetwork.com (2024-01): 7 Infinity Fabric links per GPU, "
     "128 GB/s bidirectional each = 896 GB/s (a full mesh: an all-to-all uses all 7)"),
    # The worked case: NVLink's 450 GB/s per direction against a 400 Gb/s NIC.
    ("HGX H100 scale-up / scale-out", lambda: system("hgx-h100").scale_up_to_out, 450e9 / (400e9 / 8), 0.0,
     "NVIDIA NVLink page (900 GB/s bidirectional) and ConnectX-7 (400 Gb/s) per H100"),
    # --- expert placement in published deployments -------------------------------------------------
    ("lecture: 256 experts on 64 GPUs", lambda: moe.experts_per_chip("deepseek-v3", 64), 4, 0.0,
     "lecture 33:47-36:27 (lecture-notes §3.2): DeepSeek on 64 of an NVL72's GPUs, 4 experts per GPU"),
    ("DeepSeek-V3 prefill EP32", lambda: moe.experts_per_chip("deepseek-v3", 32, redundant=32), 8 + 1, 0.0,
     "DeepSeek-V3 report, arXiv 2412.19437, §3.4: 32 redundant experts; each GPU hosts its 8 "
     "original experts plus one redundant expert"),
    ("DeepSeek-V3 decode EP320", lambda: moe.experts_per_chip("deepseek-v3", 320, redundant=64), 1, 0.0,
     "DeepSeek-V3 report §3.4: decoding on 320 GPUs, each hosting one expert, 64 GPUs for the "
     "redundant and shared experts"),
    ("DeepSeek online prefill", lambda: moe.experts_per_chip("deepseek-v3", 32, redundant=32), 9, 0.0,
     "DeepSeek-V3/R1 inference system overview (open-infra-index, 2025-03-01): EP32 with 32 "
     "redundant routed experts, each GPU handles 9 routed experts"),
    ("DeepSeek online decode", lambda: moe.experts_per_chip("deepseek-v3", 144, redundant=32), 2, 0.0,
     "DeepSeek-V3/R1 inference system overview: EP144 with 32 redundant routed experts, each GPU "
     "manages 2 routed experts"),
    # --- what a domain holds ------------------------------------------------------------------------
    ("lecture: 8-GPU Hopper box", lambda: systems.get("hgx-h100").count * systems.get("hgx-h100").chip.hbm_nominal,
     640e9, 0.0, "lecture 44:45 (lecture-notes §3.5): an 8-GPU Hopper box holds 8 x 80 = 640 GB (nominal)"),
    ("8-GPU Hopper box as reported", lambda: moe.max_total_params("hgx-h100", "fp8", headroom=0), 8 * 81_559 * 2**20,
     0.0, "nvidia-smi: 81,559 MiB per H100 (github.com/modal-labs/modal-client/pull/2797); 1 byte per weight"),
    # --- how NVIDIA counts a domain ----------------------------------------------------------------
    ("Rubin Ultra NVL576 counts dies", lambda: _domain("Rubin Ultra").dies, 576, 0.0,
     "NVIDIA GTC 2025 keynote (2025-03-18), as restated by aiwiki.ai/wiki/nvidia_rubin_ultra: "
     "NVL576, 144 packages of 4 GPU dies"),
    ("Vera Rubin NVL144 (GTC 2025 name)", lambda: _domain("Vera Rubin").dies, 144, 0.0,
     "NVIDIA GTC 2025: Vera Rubin NVL144, 72 packages of two dies, counted by die "
     "(renamed NVL72 at CES 2026, counting packages)"),
    ("NVLink 5 per differential pair", lambda: moe.lane_rate("gb200-nvl72"), 50e9 * 8 / 2, 0.0,
     "NVIDIA Blackwell architecture technical brief: two differential pairs in each direction per "
     "link, 50 GB/s per link in each direction"),
    # --- the newer MoE models of the chapter's examples ----------------------------------------------
    # The README rounds to one significant figure: 1T and 32B, hence 5%.
    ("Kimi K2 total", lambda: models.get("kimi-k2").total_params, 1e12, 0.05,
     "github.com/MoonshotAI/Kimi-K2 README, model summary: 1T total parameters"),
    ("Kimi K2 active", lambda: models.get("kimi-k2").active_params, 32e9, 0.05,
     "github.com/MoonshotAI/Kimi-K2 README: 32B activated parameters"),
    ("Qwen3-235B-A22B total", lambda: models.get("qwen3-235b-a22b").total_params, 235e9, 0.01,
     "qwenlm.github.io/blog/qwen3, Table 2: 235B total"),
    ("Qwen3-235B-A22B active", lambda: models.get("qwen3-235b-a22b").active_params, 22e9, 0.02,
     "qwenlm.github.io/blog/qwen3: 22B activated"),
    # --- measured all-to-all: the straight line through DeepEP's low-latency table ---------------------
    # EP 64, 128, 256: dispatch 173, 192, 194 µs of 128 x 8 x (7,168 + 7,168/128 x 4) = 7,569,408 B
    # (FP8 and scales), combine 314, 369, 360 µs of 128 x 8 x 7,168 x 2 = 14,680,064 B (BF16). Means
    # 186.33 and 347.67 µs: rate = 7,110,656 B / 161.33 µs = 44.07 GB/s, fixed cost 186.33 µs -
    # 7,569,408 B / 44.07 GB/s = 14.59 µs per call.
    ("DeepEP rate over the network", lambda: moe.deepep_fit()[1],
     (14_680_064 - 7_569_408) / ((314 + 369 + 360 - 173 - 192 - 194) / 3 * 1e-6), 1e-9,
     "github.com/deepseek-ai/DeepEP docs/legacy.md (commit 0297fc8): low-latency kernels on H800 with "
     "ConnectX-7 400 Gb/s, 128 tokens, hidden 7,168, top-8, FP8 dispatch, BF16 combine"),
    ("DeepEP fixed cost per call", lambda: moe.deepep_fit()[0],
     (173 + 192 + 194) / 3 * 1e-6 - 7_569_408 * ((314 + 369 + 360 - 173 - 192 - 194) / 3 * 1e-6)
     / (14_680_064 - 7_569_408), 1e-9, "DeepEP docs/legacy.md, as above"),
    ("V3: NVLink reaches 160 of H800's 200 GB/s", lambda: moe.MEASURED.eta_up * 200e9, 160e9, 1e-12,
     "DeepSeek-V3 report, arXiv 2412.19437, §3.2.2: NVLink 160 GB/s achievable; ISCA 2025 "
     "(arXiv 2505.09343): H800 NVLink 400 GB/s bidirectional"),
    # A second source for the same share: DeepEP's normal intranode kernels reach 153 GB/s, within 5%.
    ("DeepEP intranode NVLink", lambda: moe.MEASURED.eta_up * 200e9, 153e9, 0.05,
     "DeepEP docs/legacy.md: normal kernels, intranode EP8 dispatch, 153 GB/s (NVLink) on H800"),
    # --- all-to-all on a torus ------------------------------------------------------------------------
    # A ring of D chips (one dimension, 2 links each way): an AllGather of V bytes takes V/(2b); the
    # AllToAll of the same array sends V/D per chip at the torus share of 2b.
    ("ring AllGather / AllToAll time", lambda: (1 / 2) / ((1 / 1024) / (moe._torus_share(1, 1024) * 2)), 4, 0.0,
     "scaling book (jax-ml.github.io/scaling-book/sharding), worked problem: on a bidirectional ring "
     "an AllToAll is 4x cheaper than an AllGather of the same array"),
]


def _domain(prefix):
    return next(d for d in moe.domain_growth() if d.name.startswith(prefix))


@pytest.mark.parametrize("name, computed, published, tol, source", FIGURES, ids=[f[0] for f in FIGURES])
def test_published_figure(name, computed, published, tol, source):
    value = computed()
    assert abs(value - published) <= tol * abs(published) + 1e-9 * abs(published), (
        f"{name}: chalk {value:.6g} vs published {published:.6g} ({source})")


def test_there_are_at_least_ten_chapter_figures():
    assert len(FIGURES) >= 10
