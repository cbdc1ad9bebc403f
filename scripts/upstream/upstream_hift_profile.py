"""Upstream's CausalHiFTGenerator on the CPU, for comparison with `lectern bench --stage hift`:
the same full-size config as upstream_bench.py (base channels 512, F0 cond 512), seeded
random weights, mel of 50, 500 and 3000 frames (1, 10 and 60 s of audio) drawn uniformly in
[-8, 2) as Lectern's bench draws them, one untimed warm-up call at 50 frames, then each size
timed once (best of `--reps` for the 1 s and 10 s sizes). Prints one JSON line.

Usage: python upstream_hift_profile.py --threads 2 [--reps 2] [--no-60s]
(put it beside upstream_env.py, or set REFBENCH_DIR to that folder)
"""
import argparse, json, os, sys, time
sys.path.insert(0, os.environ.get("REFBENCH_DIR", os.path.dirname(os.path.abspath(__file__))))
import upstream_env  # noqa: F401
import torch
from cosyvoice.hifigan.generator import CausalHiFTGenerator
from cosyvoice.hifigan.f0_predictor import CausalConvRNNF0Predictor


@torch.inference_mode()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--no-60s", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    hift = CausalHiFTGenerator(in_channels=80, base_channels=512, nb_harmonics=8, sampling_rate=24000,
                               nsf_alpha=0.1, nsf_sigma=0.003, nsf_voiced_threshold=10,
                               upsample_rates=[8, 5, 3], upsample_kernel_sizes=[16, 11, 7],
                               istft_params={"n_fft": 16, "hop_len": 4},
                               resblock_kernel_sizes=[3, 7, 11],
                               resblock_dilation_sizes=[[1, 3, 5]] * 3,
                               source_resblock_kernel_sizes=[7, 7, 11],
                               source_resblock_dilation_sizes=[[1, 3, 5]] * 3,
                               lrelu_slope=0.1, audio_limit=0.99, conv_pre_look_right=4,
                               f0_predictor=CausalConvRNNF0Predictor(num_class=1, in_channels=80,
                                                                     cond_channels=512)).eval()
    g = torch.Generator().manual_seed(1)
    mel_of = lambda frames: torch.rand(1, 80, frames, generator=g) * 10 - 8
    hift.inference(speech_feat=mel_of(50), finalize=True)  # warm-up
    res = {"torch": torch.__version__, "threads": a.threads, "sizes": []}
    for frames in [50, 500] + ([] if a.no_60s else [3000]):
        mel = mel_of(frames)
        best = float("inf")
        for _ in range(a.reps if frames <= 500 else 1):
            t = time.perf_counter()
            wav, _ = hift.inference(speech_feat=mel, finalize=True)
            best = min(best, time.perf_counter() - t)
        audio_s = wav.shape[1] / 24000.0
        res["sizes"].append({"frames": frames, "audio_s": round(audio_s, 3), "wall_s": round(best, 4),
                             "audio_s_per_s": round(audio_s / best, 3)})
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
