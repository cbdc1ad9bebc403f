//! Takes: building the record that makes a take reproducible, and turning a record back into
//! the work that reproduces it.
//!
//! A take's audio depends on its whole flow group, so a record stores the group's composition
//! *and every member's tokens* (`GroupInfo::tokens`). Regenerating re-runs the recorded group's
//! flow and vocoder with the recorded NFE and cuts out the take; the LM is not re-run, because
//! the tokens are already recorded. Storing tokens rather than the lane-mates' texts and seeds
//! keeps a record self-contained (a few KiB) and keeps regeneration exact even if a lane-mate's
//! text was edited since.

use super::backend::BackendInfo;
use super::protocol::{GroupInfo, MinLenRule, SegmentSpec, StageTimings, TakeId, TakeRecord};
use super::{ENGINE_VERSION, EngineError, Result};

/// Hands out take ids, unique within an engine run.
#[derive(Debug, Clone, Default)]
pub struct TakeIds {
    next: TakeId,
}

impl TakeIds {
    pub fn next_id(&mut self) -> TakeId {
        self.next += 1;
        self.next
    }
}

/// What every record of a render shares.
#[derive(Debug, Clone)]
pub struct RecordContext<'a> {
    pub voice_id: &'a str,
    pub info: &'a BackendInfo,
    pub min_len_rule: MinLenRule,
}

/// The record of member `index` of a group rendered with `nfe`.
pub fn build_record(
    ctx: &RecordContext<'_>,
    spec: &SegmentSpec,
    segment_ids: &[u64],
    group_tokens: &[Vec<u32>],
    index: usize,
    nfe: usize,
    timings: StageTimings,
) -> TakeRecord {
    TakeRecord {
        segment_id: spec.id,
        text: spec.text.clone(),
        voice_id: ctx.voice_id.to_string(),
        model_id: ctx.info.model_id.clone(),
        seed: spec.seed,
        nfe,
        cfg_rate: ctx.info.cfg_rate,
        precision: ctx.info.precision,
        min_len_rule: ctx.min_len_rule,
        backend: ctx.info.backend.clone(),
        flow_matmul: ctx.info.flow_matmul.clone(),
        group: GroupInfo {
            segment_ids: segment_ids.to_vec(),
            token_counts: group_tokens.iter().map(Vec::len).collect(),
            index,
            tokens: group_tokens.to_vec(),
        },
        noise_source: ctx.info.noise_source.clone(),
        engine_version: ENGINE_VERSION.to_string(),
        tokens: group_tokens[index].clone(),
        timings,
        content: spec.content.clone().with_casting(&spec.casting),
    }
}

/// The work that reproduces a recorded take: one flow group and the member to cut out.
#[derive(Debug, Clone, PartialEq)]
pub struct RegenPlan {
    pub record: TakeRecord,
    pub group_tokens: Vec<Vec<u32>>,
    pub index: usize,
    pub nfe: usize,
}

impl RegenPlan {
    /// Checks that `record` is self-consistent and can be rendered by this engine (a voice it
    /// holds);
    /// returns the plan and warnings for differences that break bit-exactness (another backend,
    /// model, precision, noise source or engine version).
    pub fn from_record(record: TakeRecord, info: &BackendInfo) -> Result<(Self, Vec<String>)> {
        let g = &record.group;
        let bad = |why: String| Err(EngineError::InvalidInput(format!("take record: {why}")));
        if g.tokens.is_empty() {
            return bad("no group tokens (written before records stored them)".into());
        }
        if g.tokens.len() != g.segment_ids.len() || g.tokens.len() != g.token_counts.len() {
            return bad("group ids, token counts and tokens differ in length".into());
        }
        if g.tokens.iter().map(Vec::len).ne(g.token_counts.iter().copied()) {
            return bad("group token counts do not match its tokens".into());
        }
        if g.index >= g.tokens.len() || g.segment_ids[g.index] != record.segment_id {
            return bad(format!("group index {} does not point at the take", g.index));
        }
        if g.tokens[g.index] != record.tokens {
            return bad("the take's tokens differ from its group's".into());
        }
        if record.nfe == 0 {
            return bad("NFE 0".into());
        }
        if !info.voices.is_empty() && !info.voices.contains(&record.voice_id) {
            let held = info.voices.join("`, `");
            return bad(format!("voice `{}`, engine has `{held}`", record.voice_id));
        }
        let mut warnings = Vec::new();
        let mut differs = |what: &str, was: String, now: String| {
            if was != now {
                warnings.push(format!(
                    "regenerating take of segment {} with {what} `{now}` (recorded `{was}`): \
                     not bit-identical",
                    record.segment_id
                ));
            }
        };
        differs("backend", record.backend.clone(), info.backend.clone());
        differs("model", record.model_id.clone(), info.model_id.clone());
        differs("precision", format!("{:?}", record.precision), format!("{:?}", info.precision));
        differs("flow matmuls", record.flow_matmul.clone(), info.flow_matmul.clone());
        differs("noise source", record.noise_source.clone(), info.noise_source.clone());
        differs("engine", record.engine_version.clone(), ENGINE_VERSION.to_string());
        let plan = Self { group_tokens: g.tokens.clone(), index: g.index, nfe: record.nfe, record };
        Ok((plan, warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{FakeBackend, SynthBackend};

    fn record() -> TakeRecord {
        let info = FakeBackend::new().describe();
        let ctx = RecordContext { voice_id: "v", info: &info, min_len_rule: MinLenRule::Upstream };
        let spec = SegmentSpec::new(8, "b", 3);
        let toks = vec![vec![1, 2], vec![3, 4, 5]];
        build_record(&ctx, &spec, &[7, 8], &toks, 1, 10, StageTimings::default())
    }

    #[test]
    fn record_round_trips_into_a_plan() {
        let r = record();
        assert_eq!(r.group.token_counts, vec![2, 3]);
        assert_eq!(r.tokens, vec![3, 4, 5]);
        let mut info = FakeBackend::new().describe();
        info.voices = vec!["v".into(), "w".into()];
        let (plan, warnings) = RegenPlan::from_record(r.clone(), &info).unwrap();
        assert!(warnings.is_empty());
        assert_eq!((plan.index, plan.nfe, plan.group_tokens.len()), (1, 10, 2));
        let mut other_voice = r.clone();
        other_voice.voice_id = "other".into();
        let err = RegenPlan::from_record(other_voice, &info).unwrap_err().to_string();
        assert!(err.contains("voice `other`, engine has `v`, `w`"), "{err}");
        let mut broken = r.clone();
        broken.group.token_counts[0] = 5;
        assert!(RegenPlan::from_record(broken, &info).is_err());
        let mut elsewhere = info.clone();
        elsewhere.backend = "cuda:0".into();
        assert_eq!(RegenPlan::from_record(r, &elsewhere).unwrap().1.len(), 1);
    }

    /// Records say how the flow's matmuls ran; those written before they did ran plain f32,
    /// and regenerating with other matmuls warns that the audio will not be bit-identical.
    #[test]
    fn records_carry_the_flow_matmuls() {
        let r = record();
        assert_eq!(r.flow_matmul, "f32");
        let mut old = serde_json::to_value(&r).unwrap();
        old.as_object_mut().unwrap().remove("flow_matmul");
        let old: TakeRecord = serde_json::from_value(old).unwrap();
        assert_eq!(old.flow_matmul, "f32");
        let mut info = FakeBackend::new().describe();
        info.flow_matmul = "tf32x3".into();
        let (_, warnings) = RegenPlan::from_record(r, &info).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("flow matmuls `tf32x3`"), "{warnings:?}");
    }

    #[test]
    fn take_ids_are_unique() {
        let mut ids = TakeIds::default();
        assert_ne!(ids.next_id(), ids.next_id());
    }
}
