"""BM25 over passages as one sparse matrix (pure numpy/scipy).

Each passage is a row of term ids and counts; :func:`bm25_matrix` turns the rows into a P x V CSC matrix of BM25
term weights ``tf / (tf + k1 * (1 - b + b * dl / avgdl))`` and the vector of idfs ``ln(1 + (N - df + 0.5) / (df +
0.5))`` (Lucene's BM25, the variant bm25s uses by default; Lucene drops the constant factor ``k1 + 1``, which does
not change a ranking). A query's scores are then one product over its terms' columns, :func:`bm25_scores`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

K1, B = 1.5, 0.75  # bm25s's and Lucene's defaults


def bm25_matrix(rows: list[tuple[np.ndarray, np.ndarray]], n_terms: int, k1: float = K1, b: float = B
                ) -> tuple[sp.csc_matrix, np.ndarray]:
    """(P x ``n_terms`` CSC matrix of term weights, idf of each term) for passages given as ``(term ids, counts)``
    rows (each term once per row). A term no passage holds has idf 0."""
    lengths = np.fromiter((len(ids) for ids, _ in rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    term_ids = np.concatenate([ids for ids, _ in rows]).astype(np.int64) if rows else np.zeros(0, np.int64)
    counts = np.concatenate([c for _, c in rows]).astype(np.float64) if rows else np.zeros(0)
    doc_length = np.add.reduceat(counts, indptr[:-1]) if counts.size else np.zeros(len(rows))
    doc_length[lengths == 0] = 0.0  # reduceat repeats the next row's first value for an empty row
    mean_length = doc_length.mean() if len(rows) and doc_length.mean() > 0 else 1.0
    norm = np.repeat(k1 * (1.0 - b + b * doc_length / mean_length), lengths)
    weights = counts / (counts + norm)
    matrix = sp.csr_matrix((weights, term_ids, indptr), shape=(len(rows), n_terms)).tocsc()
    df = np.bincount(term_ids, minlength=n_terms).astype(np.float64)
    idf = np.where(df > 0, np.log1p((len(rows) - df + 0.5) / (df + 0.5)), 0.0)
    return matrix, idf


def bm25_scores(matrix: sp.csc_matrix, idf: np.ndarray, query_terms: np.ndarray) -> np.ndarray:
    """(P,) BM25 score of every passage for the query's term ids (each counted once; ids beyond the matrix, terms
    no passage holds, score nothing)."""
    terms = np.unique(np.asarray(query_terms, dtype=np.int64))
    terms = terms[(terms >= 0) & (terms < matrix.shape[1])]
    if terms.size == 0:
        return np.zeros(matrix.shape[0])
    return np.asarray(matrix[:, terms] @ idf[terms]).ravel()
