//! The synthesis settings every way of speaking a manuscript shares — `render`, the
//! workstation, `say` and spoken credits: which model and voice, on which device, with which
//! engine parameters, flow matmul and base seed. One struct, so a setting added here reaches
//! them all, and what a take records is computed once ([`SynthOptions::take_settings`]).

use std::path::PathBuf;

use candle::Device;
use lectern_engine::protocol::{RenderParams, TakeSettings};
use lectern_model::flow::FlowMatmul;

/// How a manuscript is spoken.
#[derive(Debug, Clone)]
pub struct SynthOptions {
    /// The model directory; `None`: the bundled tiny model.
    pub model: Option<PathBuf>,
    /// A voice name or directory; `None`: the model's demo voice.
    pub voice: Option<String>,
    pub device: Device,
    pub params: RenderParams,
    /// How the flow's matmuls run; `None`: the device's default ([`FlowMatmul::default_for`]).
    pub flow_matmul: Option<FlowMatmul>,
    /// Each segment's default seed derives from this and the segment's content
    /// ([`crate::session::seed::segment_seed`]).
    pub base_seed: u64,
    /// The book's voice speaks cross-lingually (`--cross-lingual`).
    pub cross_lingual: bool,
}

impl SynthOptions {
    /// The cast of `manuscript`: its `cast.toml` (if any) and this run's book voice options.
    pub fn cast(&self, manuscript: &std::path::Path) -> anyhow::Result<crate::cast::Cast> {
        let mut cast = crate::cast::Cast::beside(manuscript, "")?;
        cast.book_cross_lingual = self.cross_lingual;
        Ok(cast)
    }

    /// The flow matmul this run uses: the one asked for, else the device's default.
    pub fn flow_matmul(&self) -> FlowMatmul {
        self.flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(&self.device))
    }

    /// The settings this run's takes record.
    pub fn take_settings(&self) -> TakeSettings {
        TakeSettings {
            nfe: self.params.nfe,
            precision: self.params.precision,
            min_len_rule: self.params.min_len_rule,
            backend: lectern_engine::cosyvoice::device_name(&self.device),
            flow_matmul: self.flow_matmul().label(&self.device),
        }
    }
}
