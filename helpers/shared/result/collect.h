/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* collect.h: artifact collection from a hostile workspace after the job has ended: the overlayfs change set
 * (upper vs lower) and the declared outputs, copied into the result's artifacts/ while hashed, under caps;
 * the manifest that records them and its canonical digest (output_sha, docs/result-format.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "basic/macro.h"
#include "hash/hash.h"

/* Walks deeper than this are not entered (what is below is counted as skipped). */
#define COLLECT_MAX_DEPTH 256U
/* The manifest's paths and link targets, JSON-escaped, take at most this many bytes (entries past it are
 * skipped): with JOB_SPEC_MAX_ARTIFACT_FILES entries' fixed part (~16 MB) result.json stays below
 * RESULT_JSON_MAX, so that every result can be verified. */
#define COLLECT_MAX_NAME_BYTES (40ULL << 20)
/* Past this many entries seen the walk stops counting: a bound on time, whatever the caps. */
#define COLLECT_MAX_SEEN (1ULL << 24)

typedef enum ArtifactKind {
        ARTIFACT_FILE,
        ARTIFACT_LINK,
        ARTIFACT_DIR,
        ARTIFACT_DELETED,
        ARTIFACT_MISSING,
        ARTIFACT_SPECIAL,
        _ARTIFACT_KIND_MAX,
        _ARTIFACT_KIND_INVALID = -EINVAL,
} ArtifactKind;

typedef enum ArtifactChange {
        CHANGE_ADDED,
        CHANGE_MODIFIED,
        CHANGE_DELETED,
        CHANGE_OUTPUT,
        _CHANGE_MAX,
        _CHANGE_INVALID = -EINVAL,
} ArtifactChange;

const char *artifact_kind_to_string(ArtifactKind k) _pure_;
const char *artifact_change_to_string(ArtifactChange c) _pure_;

typedef struct Artifact {
        char *path;          /* relative to /workspace, no leading "/" or "./", valid UTF-8 */
        ArtifactKind kind;
        ArtifactChange change;
        bool output;         /* also (or only) a declared output */
        bool from_upper;     /* bytes come from the overlay upper dir (a change), else the merged workspace */
        uint64_t size;       /* file: bytes copied; link: target length; otherwise 0 */
        uint8_t sha256[SHA256_SIZE]; /* file only */
        char *target;        /* link only, never followed */
} Artifact;

typedef struct Manifest {
        Artifact *artifacts; /* bytewise sorted by path, unique */
        size_t n_artifacts, n_allocated;
        uint64_t total_bytes; /* bytes copied into artifacts/ */
        uint64_t skipped;     /* entries seen but not recorded (caps, depth, names that are not UTF-8) */
        bool truncated;       /* skipped > 0: the manifest is not the whole change set */
} Manifest;

typedef struct CollectLimits {
        uint64_t max_bytes;   /* total bytes copied */
        uint64_t max_entries; /* manifest entries */
} CollectLimits;

Manifest *manifest_free(Manifest *m);
static inline void manifest_freep(Manifest **m) {
        manifest_free(*m);
}
#define _cleanup_manifest_ _cleanup_(manifest_freep)

/* Collects the change set of upper_fd against lower_fd (either may be -1: no overlay / empty lower) and the
 * declared outputs (NULL-terminated workspace-relative paths, may be NULL) below merged_fd (may be -1 if
 * there are no outputs), copying every regular file into artifacts_dirfd (the result's artifacts/ dir, empty)
 * at the same relative path. Nothing below upper/lower/merged is ever followed, blocked on or opened unless
 * it is a regular file or a directory. Returns 0 and the manifest, or -errno (I/O errors, not hostile
 * content: hostile content ends up recorded as link/special/missing/skipped). */
int collect_artifacts(int upper_fd, int lower_fd, int merged_fd, char * const *outputs, int artifacts_dirfd,
                      const CollectLimits *limits, Manifest **ret);

/* [{path, kind, change, output, size, sha256 (file), target (link)}, ...] in manifest order. */
int manifest_to_json(const Manifest *m, json_object **ret);

/* sha256 hex of the canonical serialization of a manifest array: json_object_to_json_string_ext(array,
 * JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE). Used on a built and on a parsed array alike. */
int manifest_json_sha(json_object *array, char ret_hex[SHA256_HEX_SIZE]);
/* The same digest, hashed as it is serialized one entry at a time (no tree of the whole manifest). */
int manifest_sha(const Manifest *m, char ret_hex[SHA256_HEX_SIZE]);

/* The manifest as a json-c array that holds no entries: it serializes them from *m, one at a time, when the
 * result is serialized (and owns *m from here on; *m is NULL after). The way to put a large manifest into a
 * result in bounded memory; json_object_array_length() of it is 0. */
int manifest_to_json_streamed(Manifest **m, json_object **ret);
