//! HiFT vocoder (`CausalHiFTGenerator`, spec/COSYVOICE3.md §8): mel (1, 80, T) at 50 Hz →
//! 480·T samples at 24 kHz.
//!
//! F0 predictor in f64 ([`f0`]) → harmonic-plus-noise source in f32 with upstream's op order
//! ([`source`]) → its STFT ([`stft`]) feeds a causal conv decoder (candle) whose 18 output
//! channels are log-magnitude and "phase" of an n_fft 16 / hop 4 iSTFT.

pub mod conv;
pub mod f0;
pub mod source;
pub mod stft;

use std::path::Path;
use std::sync::Arc;

use candle::{D, Device, Tensor};

use self::conv::CausalConv1d;
use self::f0::{ConvRnnF0Predictor, F0_LOOKAHEAD_FRAMES};
use self::source::{SourceModuleHnNsf, SourceOutput};
use self::stft::Stft;
use super::config::{HiftConfig, ModelConfig};
use super::noise;
use super::weights::{Checkpoint, Weights};
use crate::error::{ModelError, Result};
use lectern_kernels::conv::direct::Kernel;
use lectern_kernels::conv::vocoder;
use lectern_kernels::cuda::hift as kernels;

/// Snake activation `z + 1/(α + 1e-9) · sin(αz)²`, α per channel.
#[derive(Debug, Clone)]
struct Snake {
    alpha: Tensor,     // (1, C, 1)
    inv_alpha: Tensor, // (1, C, 1): 1 / (α + 1e-9), in f32 as upstream
    /// The same two on the host, for the CPU conv that applies Snake to its input.
    alpha_host: Vec<f32>,
    inv_alpha_host: Vec<f32>,
    use_kernels: bool,
}

impl Snake {
    fn new(w: &Weights, channels: usize) -> Result<Self> {
        let alpha = w.get("alpha", &[channels])?;
        let alpha_host = alpha.to_vec1::<f32>()?;
        let inv_alpha_host: Vec<f32> = alpha_host.iter().map(|a| 1.0 / (a + 1e-9)).collect();
        let inv_alpha = Tensor::from_slice(&inv_alpha_host, (1, channels, 1), alpha.device())?;
        Ok(Self {
            alpha: alpha.reshape((1, channels, 1))?,
            inv_alpha,
            alpha_host,
            inv_alpha_host,
            use_kernels: true,
        })
    }

    fn host_params(&self) -> vocoder::SnakeParams<'_> {
        vocoder::SnakeParams { alpha: &self.alpha_host, inv_alpha: &self.inv_alpha_host }
    }

    /// `residual + conv(self(x))`: on the CPU as one pass of the conv ([`vocoder::conv1d`]'s
    /// Snake input); elsewhere Snake, then the conv.
    fn then_conv(
        &self,
        x: &Tensor,
        conv: &CausalConv1d,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        if self.use_kernels {
            let input = vocoder::ConvInput::Snake(self.host_params());
            if let Some(y) = conv.forward_cpu_of(x, input, residual)? {
                return Ok(y);
            }
        }
        conv.forward_plus(&self.forward(x)?, residual)
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if self.use_kernels {
            let (alpha, inv_alpha) = (self.alpha.flatten_all()?, self.inv_alpha.flatten_all()?);
            if let Some(y) = kernels::snake(x, &alpha, &inv_alpha)? {
                return Ok(y);
            }
            if vocoder::applies(x) && x.dims3()?.0 == 1 {
                return Ok(vocoder::snake(x, self.host_params())?);
            }
        }
        let s = x.broadcast_mul(&self.alpha)?.sin()?.sqr()?;
        Ok((x + s.broadcast_mul(&self.inv_alpha)?)?)
    }
}

/// `CausalResBlock`: three (Snake, dilated causal conv, Snake, causal conv) residual units.
#[derive(Debug, Clone)]
struct ResBlock {
    convs1: Vec<CausalConv1d>,
    convs2: Vec<CausalConv1d>,
    activations1: Vec<Snake>,
    activations2: Vec<Snake>,
}

impl ResBlock {
    fn new(w: &Weights, channels: usize, kernel: usize, dilations: &[usize]) -> Result<Self> {
        let mut rb = Self {
            convs1: Vec::new(),
            convs2: Vec::new(),
            activations1: Vec::new(),
            activations2: Vec::new(),
        };
        for (j, &d) in dilations.iter().enumerate() {
            let c = channels;
            rb.convs1.push(CausalConv1d::left(&w.pp(format!("convs1.{j}")), c, c, kernel, d)?);
            rb.convs2.push(CausalConv1d::left(&w.pp(format!("convs2.{j}")), c, c, kernel, 1)?);
            rb.activations1.push(Snake::new(&w.pp(format!("activations1.{j}")), c)?);
            rb.activations2.push(Snake::new(&w.pp(format!("activations2.{j}")), c)?);
        }
        Ok(rb)
    }

    fn convs_mut(&mut self) -> impl Iterator<Item = &mut CausalConv1d> {
        self.convs1.iter_mut().chain(&mut self.convs2)
    }

    fn set_kernels(&mut self, on: bool) {
        self.convs_mut().for_each(|conv| conv.use_kernels = on);
        for snake in self.activations1.iter_mut().chain(&mut self.activations2) {
            snake.use_kernels = on;
        }
    }

    /// Whether Lectern's kernels are on (candle's ops otherwise).
    fn use_kernels(&self) -> bool {
        self.convs1.iter().all(|c| c.use_kernels)
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        for j in 0..self.convs1.len() {
            let y = self.activations1[j].then_conv(&x, &self.convs1[j], None)?;
            x = self.activations2[j].then_conv(&y, &self.convs2[j], Some(&x))?;
        }
        Ok(x)
    }
}

/// Named intermediate tensors of one call (parity taps), in upstream's names.
pub type Taps = Vec<(String, Tensor)>;

/// Everything one vocoder call produced.
#[derive(Debug, Clone)]
pub struct HiftOutput {
    /// F0 per frame, Hz.
    pub f0: Vec<f32>,
    /// Source excitation, 480 per F0 frame.
    pub source: Vec<f32>,
    /// The waveform, clamped to ±audio_limit.
    pub speech: Vec<f32>,
}

/// `CausalHiFTGenerator`.
#[derive(Debug)]
pub struct Hift {
    cfg: HiftConfig,
    conv_pre: CausalConv1d,
    /// `ups.i`: nearest repeat by `upsample_rates[i]`, then this causal conv.
    ups: Vec<CausalConv1d>,
    source_downs: Vec<CausalConv1d>,
    source_resblocks: Vec<ResBlock>,
    resblocks: Vec<ResBlock>,
    conv_post: CausalConv1d,
    f0_predictor: ConvRnnF0Predictor,
    m_source: SourceModuleHnNsf,
    stft: Stft,
    device: Device,
}

impl Hift {
    /// Loads `hift.pt` (or `.safetensors`) of the model described by `cfg`.
    pub fn load(path: &Path, cfg: &ModelConfig, device: &Device) -> Result<Self> {
        let ckpt = Checkpoint::load(path, device)?.strip_key_substring("generator.");
        Self::new(cfg, &Weights::root(Arc::new(ckpt)))
    }

    /// Builds the generator from a root view of the HiFT checkpoint. `cfg` is the whole model
    /// config because the source-noise offset depends on the flow's sizes (§10.3).
    pub fn new(cfg: &ModelConfig, w: &Weights) -> Result<Self> {
        let h = &cfg.hift;
        let offset = noise::hift_sine_word_offset(
            cfg.flow.vocab_size,
            cfg.flow.input_size,
            cfg.flow.spk_embed_dim,
            h.in_channels,
            h.f0_cond_channels,
            h.nb_harmonics + 1,
        );
        let base = h.base_channels;
        let n_stages = h.upsample_rates.len();
        let stage_channels: Vec<usize> = (1..=n_stages).map(|i| base >> i).collect();
        let bins2 = h.n_fft + 2;
        let conv_pre =
            CausalConv1d::right(&w.pp("conv_pre"), h.in_channels, base, h.conv_pre_look_right + 1)?;
        let mut ups = Vec::new();
        let mut c_prev = base;
        for (i, (&k, &c)) in h.upsample_kernel_sizes.iter().zip(&stage_channels).enumerate() {
            ups.push(CausalConv1d::left(&w.pp(format!("ups.{i}")), c_prev, c, k, 1)?);
            c_prev = c;
        }
        // Downsample rates of the source STFT per stage: cumulative products of the reversed
        // upsample rates (all but the first), reversed again: 15, 3, 1 for rates 8, 5, 3.
        let mut cum = vec![1usize];
        for &r in h.upsample_rates.iter().rev().take(n_stages - 1) {
            cum.push(cum.last().copied().unwrap_or(1) * r);
        }
        cum.reverse();
        let mut source_downs = Vec::new();
        let mut source_resblocks = Vec::new();
        for (i, &u) in cum.iter().enumerate() {
            let c = stage_channels[i];
            let wd = w.pp(format!("source_downs.{i}"));
            source_downs.push(if u == 1 {
                CausalConv1d::left(&wd, bins2, c, 1, 1)?
            } else {
                CausalConv1d::downsample(&wd, bins2, c, u)?
            });
            source_resblocks.push(ResBlock::new(
                &w.pp(format!("source_resblocks.{i}")),
                c,
                h.source_resblock_kernel_sizes[i],
                &h.source_resblock_dilation_sizes[i],
            )?);
        }
        let mut resblocks = Vec::new();
        for (i, &c) in stage_channels.iter().enumerate() {
            for (j, (&k, d)) in
                h.resblock_kernel_sizes.iter().zip(&h.resblock_dilation_sizes).enumerate()
            {
                let r = i * h.resblock_kernel_sizes.len() + j;
                resblocks.push(ResBlock::new(&w.pp(format!("resblocks.{r}")), c, k, d)?);
            }
        }
        let conv_post = CausalConv1d::left(&w.pp("conv_post"), c_prev, bins2, 7, 1)?;
        let f0_predictor =
            ConvRnnF0Predictor::new(h.in_channels, h.f0_cond_channels, &w.pp("f0_predictor"))?;
        let m_source = SourceModuleHnNsf::new(h, &w.pp("m_source"), offset)?;
        Ok(Self {
            cfg: h.clone(),
            conv_pre,
            ups,
            source_downs,
            source_resblocks,
            resblocks,
            conv_post,
            f0_predictor,
            m_source,
            stft: Stft::new(h.n_fft, h.hop_len),
            device: w.device(),
        })
    }

    pub fn config(&self) -> &HiftConfig {
        &self.cfg
    }

    /// Uses an explicit source-noise buffer `(rows, harmonics)` instead of the rebuilt one.
    /// Runs Lectern's own kernels (CUDA: [`kernels`]; CPU: [`vocoder`]) where they apply (`on`,
    /// the default), or candle's ops only (benchmarks compare the two; within the fixture
    /// gates either way).
    pub fn set_kernels(&mut self, on: bool) {
        self.convs_mut().for_each(|conv| conv.use_kernels = on);
        for block in self.resblocks.iter_mut().chain(&mut self.source_resblocks) {
            block.set_kernels(on); // and their Snakes
        }
    }

    /// Runs the stride-1 CPU convs on `kernel` of [`lectern_kernels::conv::direct`], or (none)
    /// on the stacked-tap path ([`vocoder::conv1d`]); the default is
    /// [`lectern_kernels::conv::direct::vocoder_default`]. Benchmarks
    /// compare them; within the fixture gates either way.
    pub fn set_direct_conv(&mut self, kernel: Option<Kernel>) {
        self.convs_mut().for_each(|conv| conv.direct = kernel);
    }

    /// Every conv of the generator (the f32 ones; the f0 predictor's run in f64 on candle's ops),
    /// the residual blocks' included.
    fn convs_mut(&mut self) -> impl Iterator<Item = &mut CausalConv1d> {
        let single = [&mut self.conv_pre, &mut self.conv_post].into_iter();
        let blocks = self.resblocks.iter_mut().chain(&mut self.source_resblocks);
        single
            .chain(&mut self.ups)
            .chain(&mut self.source_downs)
            .chain(blocks.flat_map(ResBlock::convs_mut))
    }

    pub fn set_noise_buffer(&mut self, buffer: Vec<f32>) {
        self.m_source.set_noise_buffer(buffer);
    }

    /// The end-of-utterance call (`finalize=True`): mel `(1, 80, T)` → exactly `480·T` samples.
    pub fn forward(&self, mel: &Tensor) -> Result<Vec<f32>> {
        Ok(self.inference(mel, true, None)?.speech)
    }

    /// `hift.inference(mel, finalize)`. `taps` collects intermediates under fixture names.
    pub fn inference(
        &self,
        mel: &Tensor,
        finalize: bool,
        mut taps: Option<&mut Taps>,
    ) -> Result<HiftOutput> {
        let t_frames = self.check_mel(mel, finalize)?;
        let mel = mel.to_device(&self.device)?;
        let f0 = self.f0_predictor.forward(&mel, finalize)?;
        let src = self.m_source.forward(&f0, taps.is_some())?;
        if let Some(t) = taps.as_deref_mut() {
            self.push_source_taps(t, &f0, &src)?;
        }
        let x = if finalize { mel } else { mel.narrow(2, 0, t_frames - F0_LOOKAHEAD_FRAMES)? };
        let speech = self.decode(&x, &src.source, finalize, taps)?;
        Ok(HiftOutput { f0, source: src.source, speech })
    }

    /// F0 (Hz) per frame for a mel `(1, 80, T)`: T values, or T − 3 without `finalize`.
    pub fn f0(&self, mel: &Tensor, finalize: bool) -> Result<Vec<f32>> {
        self.check_mel(mel, finalize)?;
        self.f0_predictor.forward(&mel.to_device(&self.device)?, finalize)
    }

    /// The source for given F0 frames and noise rows `(480·frames, harmonics)`.
    pub fn source_with_noise(&self, f0: &[f32], noise: &[f32], keep_taps: bool) -> SourceOutput {
        self.m_source.forward_with_noise(f0, noise, keep_taps)
    }

    fn push_source_taps(&self, taps: &mut Taps, f0: &[f32], src: &SourceOutput) -> Result<()> {
        let dev = &Device::Cpu;
        let (t, l, hn) = (f0.len(), src.source.len(), self.m_source.harmonics());
        taps.push(("f0".into(), Tensor::from_slice(f0, (1, t), dev)?));
        let up: Vec<f32> = f0.iter().flat_map(|&f| std::iter::repeat_n(f, l / t.max(1))).collect();
        taps.push(("f0_upsampled".into(), Tensor::from_vec(up, (1, 1, l), dev)?));
        if let Some(sw) = &src.sine_waves {
            taps.push(("sine_waves".into(), Tensor::from_slice(sw, (1, l, hn), dev)?));
        }
        if let Some(uv) = &src.uv {
            taps.push(("uv".into(), Tensor::from_slice(uv, (1, l, 1), dev)?));
        }
        taps.push(("source".into(), Tensor::from_slice(&src.source, (1, 1, l), dev)?));
        Ok(())
    }

    /// Checks the mel's shape and values; returns its frame count.
    fn check_mel(&self, mel: &Tensor, finalize: bool) -> Result<usize> {
        let dims = mel.dims();
        if dims.len() != 3 || dims[0] != 1 || dims[1] != self.cfg.in_channels {
            return Err(ModelError::InvalidInput(format!(
                "vocoder input must be a mel of shape (1, {}, frames), got {dims:?}",
                self.cfg.in_channels
            )));
        }
        let frames = dims[2];
        let min = if finalize { 1 } else { F0_LOOKAHEAD_FRAMES + self.cfg.conv_pre_look_right + 1 };
        if frames < min {
            return Err(ModelError::InvalidInput(format!(
                "vocoder input has {frames} mel frames; this call needs at least {min}"
            )));
        }
        let values = mel.to_dtype(candle::DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            let (c, t) = (i / frames, i % frames);
            return Err(ModelError::InvalidInput(format!(
                "vocoder input mel is not finite at bin {c}, frame {t}"
            )));
        }
        Ok(frames)
    }

    /// The decoder network (`decode`): mel `(1, 80, T)` plus source samples → waveform.
    pub fn decode(
        &self,
        mel: &Tensor,
        source: &[f32],
        finalize: bool,
        mut taps: Option<&mut Taps>,
    ) -> Result<Vec<f32>> {
        let mut tap = |name: &str, t: &Tensor| -> Result<()> {
            if let Some(taps) = taps.as_deref_mut() {
                taps.push((name.to_string(), t.to_device(&Device::Cpu)?));
            }
            Ok(())
        };
        let bins = self.stft.bins();
        let (re, im) = self.stft.forward(source);
        let mut frames = self.stft.frames(source.len());
        let re = Tensor::from_vec(re, (1, bins, frames), &self.device)?;
        let im = Tensor::from_vec(im, (1, bins, frames), &self.device)?;
        tap("source_stft_real", &re)?;
        tap("source_stft_imag", &im)?;
        let mut s_stft = Tensor::cat(&[&re, &im], 1)?; // (1, 18, F)
        let mut x = if finalize {
            self.conv_pre.forward(mel)?
        } else {
            // Streaming chunk: the last frames are real look-ahead; the source is cut to match.
            let cut =
                self.cfg.upsample_rates.iter().product::<usize>() * self.cfg.conv_pre_look_right;
            frames -= cut;
            s_stft = s_stft.narrow(2, 0, frames)?;
            self.conv_pre.forward_unpadded(mel)?
        };
        tap("conv_pre", &x)?;
        let n_kernels = self.cfg.resblock_kernel_sizes.len();
        let n_stages = self.ups.len();
        for (i, up) in self.ups.iter().enumerate() {
            x = leaky_relu_upsample_conv(&x, self.cfg.lrelu_slope, self.cfg.upsample_rates[i], up)?;
            tap(&format!("ups{i}"), &x)?;
            if i == n_stages - 1 {
                // ReflectionPad1d((1, 0)): the new frame 0 is a copy of frame 1.
                x = Tensor::cat(&[&x.narrow(2, 1, 1)?, &x], 2)?;
                tap("reflection_pad", &x)?;
            }
            let si = self.source_downs[i].forward(&s_stft)?;
            tap(&format!("source_down{i}"), &si)?;
            let si = self.source_resblocks[i].forward(&si)?;
            tap(&format!("source_res{i}"), &si)?;
            x = (x + si)?;
            let blocks = &self.resblocks[i * n_kernels..(i + 1) * n_kernels];
            x = if vocoder::applies(&x) && blocks.iter().all(|b| b.use_kernels()) {
                let outs: Vec<Tensor> =
                    blocks.iter().map(|b| b.forward(&x)).collect::<Result<_>>()?;
                vocoder::mean(&outs)?
            } else {
                let mut xs = blocks[0].forward(&x)?;
                for block in &blocks[1..] {
                    xs = (xs + block.forward(&x)?)?;
                }
                // A true division (candle's `/ f64` multiplies by the reciprocal).
                xs.broadcast_div(&Tensor::new(n_kernels as f32, x.device())?)?
            };
        }
        // F.leaky_relu's default slope 0.01, not lrelu_slope; upsampling by 1 is none.
        x = leaky_relu_upsample_conv(&x, 0.01, 1, &self.conv_post)?;
        tap("conv_post", &x)?;
        let x = x.squeeze(0)?; // (18, F)
        let mag = x.narrow(0, 0, bins)?.exp()?.minimum(100f64)?;
        let phase = x.narrow(0, bins, bins)?.sin()?;
        let mag = mag.flatten_all()?.to_vec1::<f32>()?;
        let phase = phase.flatten_all()?.to_vec1::<f32>()?;
        let mut wave = self.stft.inverse(&mag, &phase, frames);
        tap("istft_out", &Tensor::from_slice(&wave, (1, wave.len()), &Device::Cpu)?)?;
        if !finalize {
            let cut = self.cfg.upsample_scale();
            wave.truncate(wave.len().saturating_sub(cut));
        }
        let limit = self.cfg.audio_limit as f32;
        for v in &mut wave {
            *v = v.clamp(-limit, limit);
        }
        tap("speech", &Tensor::from_slice(&wave, (1, wave.len()), &Device::Cpu)?)?;
        Ok(wave)
    }
}

/// `up(upsample_nearest(leaky_relu(x, slope), times))`: on the CPU one pass of the conv
/// ([`vocoder::ConvInput::LeakyReluRepeat`]), never writing the upsampled input; elsewhere the
/// three ops.
fn leaky_relu_upsample_conv(
    x: &Tensor,
    slope: f64,
    times: usize,
    up: &CausalConv1d,
) -> Result<Tensor> {
    let input = vocoder::ConvInput::LeakyReluRepeat { slope: slope as f32, times };
    if let Some(y) = up.forward_cpu_of(x, input, None)? {
        return Ok(y);
    }
    let activated = leaky_relu(x, slope)?;
    match times {
        1 => up.forward(&activated),
        _ => up.forward(&upsample_nearest(&activated, times)?),
    }
}

fn leaky_relu(x: &Tensor, slope: f64) -> Result<Tensor> {
    // For 0 ≤ slope < 1, max(x, slope·x) is x for x ≥ 0 and slope·x below: exact, two passes.
    Ok(x.maximum(&(x * slope)?)?)
}

/// Nearest-neighbour repeat of every frame `u` times: (b, c, t) → (b, c, t·u).
fn upsample_nearest(x: &Tensor, u: usize) -> Result<Tensor> {
    let (b, c, t) = x.dims3()?;
    Ok(x.unsqueeze(D::Minus1)?.broadcast_as((b, c, t, u))?.reshape((b, c, t * u))?)
}
