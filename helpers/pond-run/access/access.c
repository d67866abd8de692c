/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* access.c: who may use pond besides root: the submitter's membership of the group, and the profiles
 * policy/access.json lets members use (access.h). */
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access/access.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "basic/json-util.h"
#include "basic/strv.h"

static int fail(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

int access_policy_parse(const char *text, size_t len, AccessPolicy *ret, char **ret_error) {
        static const char *const known[] = { "group_profiles", NULL };
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **profiles = NULL;
        json_object *v;
        int r;

        r = json_parse_strict(text, len, JSON_STRICT_MAX_BYTES, JSON_STRICT_MAX_DEPTH, &o, &err);
        if (r < 0)
                return fail(ret_error, -EINVAL, "%s", err ?: "invalid JSON");
        r = json_check_object(o, NULL, ret_error);
        if (r >= 0)
                r = json_check_keys(o, NULL, known, ret_error);
        if (r < 0)
                return r;
        v = json_get(o, "group_profiles");
        if (v) {
                r = json_check_array(v, "group_profiles", 0, 64, ret_error);
                if (r < 0)
                        return r;
                /* An empty list is a policy too: members may submit nothing. */
                profiles = calloc(1, sizeof(char *));
                if (!profiles)
                        return -ENOMEM;
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        const char *s;
                        char field[64];

                        snprintf(field, sizeof field, "group_profiles[%zu]", i);
                        r = json_check_string(json_object_array_get_idx(v, i), field, 64, &s, ret_error);
                        if (r < 0)
                                return r;
                        char *copy = strdup(s);

                        r = copy ? strv_push(&profiles, copy) : -ENOMEM;
                        if (r < 0)
                                return r;
                }
        }
        *ret = (AccessPolicy) { .profiles = TAKE_PTR(profiles) };
        return 0;
}

int access_policy_load(const char *dir, AccessPolicy *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL, *err = NULL;
        size_t len;
        int r;

        if (asprintf(&path, "%s/%s", dir, ACCESS_POLICY_FILE) < 0)
                return -ENOMEM;
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r == -ENOENT) {
                *ret = (AccessPolicy) {};
                return 0;
        }
        if (r < 0)
                return fail(ret_error, -EINVAL, "policy: cannot read %s: %s", path, strerror(-r));
        r = access_policy_parse(buf, len, ret, &err);
        if (r < 0)
                return fail(ret_error, -EINVAL, "policy: %s: %s", path, err ?: strerror(-r));
        return 0;
}

void access_policy_done(AccessPolicy *p) {
        strv_free(p->profiles);
        *p = (AccessPolicy) {};
}

bool access_profile_allowed(const AccessPolicy *p, const char *profile, bool confined) {
        if (!p->profiles)
                return confined;
        for (char **s = p->profiles; *s; s++)
                if (streq(*s, profile))
                        return true;
        return false;
}

int access_submitter_lookup(uid_t uid, Submitter *ret, char **ret_error) {
        _cleanup_free_ char *pwbuf = NULL, *grbuf = NULL;
        _cleanup_free_ gid_t *groups = NULL;
        struct passwd pw, *pwp = NULL;
        struct group gr, *grp = NULL;
        long pwsize = sysconf(_SC_GETPW_R_SIZE_MAX), grsize = sysconf(_SC_GETGR_R_SIZE_MAX);
        int n = 64, r;
        bool member = false;

        pwsize = pwsize > 0 ? pwsize : 16384;
        grsize = grsize > 0 ? grsize : 16384;
        pwbuf = malloc((size_t) pwsize);
        grbuf = malloc((size_t) grsize);
        if (!pwbuf || !grbuf)
                return -ENOMEM;
        r = getpwuid_r(uid, &pw, pwbuf, (size_t) pwsize, &pwp);
        if (r != 0 || !pwp)
                return fail(ret_error, -EPERM, "submitter: uid %u is no user of this worker", (unsigned) uid);
        if (strlen(pw.pw_name) >= ACCESS_NAME_MAX)
                return fail(ret_error, -EPERM, "submitter: the name of uid %u is too long", (unsigned) uid);
        *ret = (Submitter) { .uid = uid, .gid = pw.pw_gid };
        strcpy(ret->user, pw.pw_name);
        if (uid == 0)
                return 0;
        r = getgrnam_r(POND_GROUP, &gr, grbuf, (size_t) grsize, &grp);
        if (r != 0 || !grp)
                return fail(ret_error, -EPERM, "submitter: this worker has no group '%s'", POND_GROUP);
        for (;;) {
                gid_t *g = reallocarray(groups, (size_t) n, sizeof *g);
                int m = n;

                if (!g)
                        return -ENOMEM;
                groups = g;
                if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &m) >= 0) {
                        n = m;
                        break;
                }
                if (m <= n || m > 65536)
                        return fail(ret_error, -EPERM, "submitter: cannot list the groups of %s", pw.pw_name);
                n = m;
        }
        for (int i = 0; i < n; i++)
                member = member || groups[i] == grp->gr_gid;
        if (!member)
                return fail(ret_error, -EPERM, "submitter: %s (uid %u) is not a member of the group '%s'", pw.pw_name,
                            (unsigned) uid, POND_GROUP);
        return 0;
}
