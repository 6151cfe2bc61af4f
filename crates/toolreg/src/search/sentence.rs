//! A sentence-transformers model on the CPU, in pure Rust (`candle`): the
//! [`Encoder`] of hybrid search.

use std::path::Path;

use candle_core::{DType, Device, IndexOp, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{Encoder, SearchError};

/// Longest input read, in tokens, when the model's directory does not say
/// (`sentence_bert_config.json`'s `max_seq_length`): all-MiniLM-L6-v2's.
const DEFAULT_MAX_TOKENS: usize = 256;

/// Largest weights file loaded: the small models this is for are 25 to
/// 130 MB; a larger file is not one of them.
const MAX_WEIGHTS: u64 = 1 << 30;

/// How a sentence's vector is made from its tokens' vectors, as the
/// model's `1_Pooling/config.json` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    /// The mean of the tokens' vectors (all-MiniLM, e5).
    Mean,
    /// The first token's (`[CLS]`) vector (bge).
    Cls,
}

/// A BERT-family sentence-transformers model (all-MiniLM-L6-v2,
/// bge-small-en-v1.5, e5-small; 384 dimensions) run on the CPU with
/// `candle`, from a directory holding `model.safetensors`,
/// `tokenizer.json` and `config.json` (and, as sentence-transformers
/// writes them, `1_Pooling/config.json` and `sentence_bert_config.json`).
///
/// Padding is the batch's longest text (a `tokenizer.json` that pads every
/// input to a fixed length is overridden), and padding tokens take no part
/// in the mean, so a text's vector does not depend on what it was encoded
/// with. Vectors are unit length.
///
/// ```no_run
/// use toolreg::search::{Embeddings, SentenceEncoder};
/// use toolreg::FunctionRegistry;
///
/// let encoder = SentenceEncoder::load("models/all-MiniLM-L6-v2".as_ref())?;
/// let mut registry = FunctionRegistry::new();
/// registry.use_embeddings(Embeddings::new(encoder));
/// # Ok::<(), toolreg::search::SearchError>(())
/// ```
pub struct SentenceEncoder {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    id: String,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder").field("model", &self.id).field("pooling", &self.pooling).finish()
    }
}

impl SentenceEncoder {
    /// Load the model in `dir`. Errors name the file that is missing or
    /// wrong.
    pub fn load(dir: &Path) -> Result<Self, SearchError> {
        let bad = |file: &str, why: String| SearchError::Model(format!("{}: {why}", dir.join(file).display()));
        let read = |file: &str| std::fs::read(dir.join(file)).map_err(|e| bad(file, e.to_string()));
        let config_bytes = read("config.json")?;
        let config: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| bad("config.json", format!("not a BERT model's configuration: {e}")))?;

        let weights = dir.join("model.safetensors");
        let size = std::fs::metadata(&weights).map_err(|e| bad("model.safetensors", e.to_string()))?.len();
        if size > MAX_WEIGHTS {
            return Err(bad("model.safetensors", format!("{size} bytes is larger than a small sentence model")));
        }
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(&weights, &device)
            .map_err(|e| bad("model.safetensors", format!("cannot read the weights: {e}")))?;
        let model = BertModel::load(VarBuilder::from_tensors(tensors, DType::F32, &device), &config)
            .map_err(|e| bad("model.safetensors", format!("not the weights of config.json's model: {e}")))?;

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| bad("tokenizer.json", format!("not a tokenizer: {e}")))?;
        let max_tokens = max_tokens(dir).min(config.max_position_embeddings);
        tokenizer.with_padding(Some(PaddingParams { strategy: PaddingStrategy::BatchLongest, ..Default::default() }));
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|e| bad("tokenizer.json", e.to_string()))?;

        let pooling = pooling(dir);
        // Names the weights by what defines them (the configuration and the
        // weights' size, not a hash of 90 MB at every start).
        let digest = Sha256::new().chain_update(&config_bytes).chain_update(size.to_le_bytes()).finalize();
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
        let id = format!("{name}-{:02x}{:02x}{:02x}{:02x}", digest[0], digest[1], digest[2], digest[3]);
        Ok(SentenceEncoder { model, tokenizer, pooling, id })
    }

    fn forward(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| candle_core::Error::Msg(format!("cannot tokenize: {e}")))?;
        let device = &self.model.device;
        let ids: Vec<Tensor> =
            encodings.iter().map(|e| Tensor::new(e.get_ids(), device)).collect::<candle_core::Result<_>>()?;
        let masks: Vec<Tensor> = encodings
            .iter()
            .map(|e| Tensor::new(e.get_attention_mask(), device))
            .collect::<candle_core::Result<_>>()?;
        let ids = Tensor::stack(&ids, 0)?;
        let mask = Tensor::stack(&masks, 0)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let pooled = match self.pooling {
            Pooling::Cls => hidden.i((.., 0))?,
            Pooling::Mean => {
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                summed.broadcast_div(&mask.sum(1)?)?
            }
        };
        let norms = pooled.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        pooled.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Encoder for SentenceEncoder {
    fn model(&self) -> &str {
        &self.id
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.forward(texts).map_err(|e| SearchError::Model(format!("{}: {e}", self.id)))
    }
}

/// `max_seq_length` of `sentence_bert_config.json`, if it says.
fn max_tokens(dir: &Path) -> usize {
    std::fs::read(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|config| config.get("max_seq_length")?.as_u64())
        .map_or(DEFAULT_MAX_TOKENS, |n| usize::try_from(n).unwrap_or(DEFAULT_MAX_TOKENS).clamp(8, 8192))
}

/// The pooling of `1_Pooling/config.json`: the first token's vector when it
/// says so, else the mean (what sentence-transformers does without one).
fn pooling(dir: &Path) -> Pooling {
    let cls = std::fs::read(dir.join("1_Pooling").join("config.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|config| config.get("pooling_mode_cls_token")?.as_bool())
        .unwrap_or(false);
    if cls { Pooling::Cls } else { Pooling::Mean }
}
