/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seccomp-check.h: validation of policy/seccomp.json (an OCI linux.seccomp object) before any job uses it. */
#pragma once

#include <json-c/json.h>

/* Fails closed: -EINVAL with *ret_error (if not NULL) naming the offending field when the default action
 * allows, an action or operator is unknown, a syscall name is unknown to libseccomp, a forbidden syscall
 * (seccomp_forbidden_syscalls) is allowed, clone/personality/socket are allowed without their argument
 * filters, an errnoRet is neither EPERM nor ENOSYS (all runsc can return), or libseccomp refuses to compile
 * the filter. The filter is compiled, never loaded. */
int seccomp_policy_check(json_object *seccomp, char **ret_error);

/* The invariant: syscalls no profile may allow, whatever seccomp.json says. NULL-terminated. */
extern const char *const seccomp_forbidden_syscalls[];

/* "SCMP_ARCH_X86_64" etc. for this host, or NULL if pond's policy cannot describe it. */
const char *seccomp_native_arch_name(void);
