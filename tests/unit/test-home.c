/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-home.c: the confined job's home: the spec's home_files (shape, bounds, placeholders checked against
 * the job's credentials; every refusal names the field), rendering each placeholder, writing the files
 * without following symlinks, and the home_size knob. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "policy/home.h"
#include "policy/policy.h"
#include "policy/spec.h"
#include "tests.h"

#define BASE "\"job_id\":\"j1\",\"tenant\":\"t\",\"command\":[\"true\"]"
#define CRED "\"credentials\":[{\"name\":\"anthropic\"},{\"name\":\"open-ai\"}]"
#define HOME1(file) "{" BASE ",\"home_files\":[" file "]}"
#define HOME1C(file) "{" BASE "," CRED ",\"home_files\":[" file "]}"

static int parse(const char *json, JobSpec **ret, char **ret_error) {
        return job_spec_parse(json, strlen(json), ret, ret_error);
}

TEST(spec_home_files_parsed) {
        static const char json[] = "{" BASE "," CRED ",\"home_files\":["
                "{\"path\":\".claude/settings.json\",\"content\":\"{\\\"url\\\":\\\"{{BROKER_URL:anthropic}}\\\"}\"},"
                "{\"path\":\"bin/run\",\"content\":\"#!/bin/sh\\n\",\"mode\":\"0700\"},"
                "{\"path\":\"a/b/c/.key\",\"content\":\"{{DUMMY_KEY:open-ai}} {{JOB_ID}}\",\"mode\":\"0400\"},"
                "{\"path\":\"empty\",\"content\":\"\",\"mode\":\"0500\"}]}";
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        _cleanup_free_ char *error = NULL;

        ASSERT_OK(parse(json, &s, &error));
        ASSERT_EQ(4, s->n_home_files);
        ASSERT_STREQ(".claude/settings.json", s->home_files[0].path);
        ASSERT_STREQ("{\"url\":\"{{BROKER_URL:anthropic}}\"}", s->home_files[0].content);
        ASSERT_EQ(0600, s->home_files[0].mode);
        ASSERT_EQ(0700, s->home_files[1].mode);
        ASSERT_EQ(0400, s->home_files[2].mode);
        ASSERT_EQ(0500, s->home_files[3].mode);
        ASSERT_STREQ("", s->home_files[3].content);
}

TEST(spec_home_files_absent_or_empty) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL, *t = NULL;

        ASSERT_OK(parse("{" BASE "}", &s, NULL));
        ASSERT_EQ(0, s->n_home_files);
        ASSERT_OK(parse(HOME1(""), &t, NULL));
        ASSERT_EQ(0, t->n_home_files);
}

typedef struct Refusal {
        const char *json;
        const char *error;
} Refusal;

TEST(spec_home_files_refusals_name_the_field) {
        static const Refusal cases[] = {
                { "{" BASE ",\"home_files\":{}}", "home_files: must be an array" },
                { HOME1("\"x\""), "home_files[0]: must be an object" },
                { HOME1("{\"content\":\"\"}"), "home_files[0].path: missing" },
                { HOME1("{\"path\":\"a\"}"), "home_files[0].content: missing" },
                { HOME1("{\"path\":\"a\",\"content\":\"\",\"owner\":0}"), "unknown key 'owner' in home_files[0]" },
                { HOME1("{\"path\":\"/etc/passwd\",\"content\":\"\"}"), "home_files[0].path: must be a relative" },
                { HOME1("{\"path\":\"../x\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a/../../x\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"./x\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a//b\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a/\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a b\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a\\nb\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"caf\\u00e9\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"1/2/3/4/5/6/7/8/9\",\"content\":\"\"}"), "home_files[0].path:" },
                { HOME1("{\"path\":\"a\",\"content\":\"\",\"mode\":\"0644\"}"), "home_files[0].mode: must be" },
                { HOME1("{\"path\":\"a\",\"content\":\"\",\"mode\":\"4700\"}"), "home_files[0].mode: must be" },
                { HOME1("{\"path\":\"a\",\"content\":\"\",\"mode\":384}"), "home_files[0].mode: must be a string" },
                { HOME1("{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a\",\"content\":\"\"}"),
                  "home_files[1].path: 'a' appears twice" },
                { HOME1("{\"path\":\"a/b\",\"content\":\"\"},{\"path\":\"a\",\"content\":\"\"}"),
                  "home_files[1].path: 'a' and 'a/b'" },
                { HOME1("{\"path\":\"a\",\"content\":\"\"},{\"path\":\"a/b\",\"content\":\"\"}"),
                  "home_files[1].path: 'a/b' and 'a'" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{HOME}}\"}"),
                  "home_files[0].content: unknown placeholder '{{HOME}}'" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{ JOB_ID }}\"}"),
                  "home_files[0].content: unknown placeholder" },
                { HOME1("{\"path\":\"a\",\"content\":\"x {{JOB_ID\"}"),
                  "home_files[0].content: unterminated or unknown placeholder at '{{JOB_ID'" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{JOB_ID:x}}\"}"),
                  "home_files[0].content: placeholder '{{JOB_ID:x}}' takes no argument" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{DUMMY_KEY}}\"}"),
                  "home_files[0].content: placeholder '{{DUMMY_KEY}}' needs a credential name" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{BROKER_URL:Bad_Name}}\"}"),
                  "home_files[0].content: placeholder '{{BROKER_URL:Bad_Name}}' needs a credential name" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{BROKER_URL:anthropic}}\"}"),
                  "home_files[0].content: {{BROKER_URL:anthropic}} needs credentials, and this job has none" },
                { HOME1("{\"path\":\"a\",\"content\":\"{{DUMMY_KEY:anthropic}}\"}"),
                  "home_files[0].content: {{DUMMY_KEY:anthropic}} needs credentials" },
                { HOME1C("{\"path\":\"a\",\"content\":\"ok\"},{\"path\":\"b\",\"content\":\"{{DUMMY_KEY:openai}}\"}"),
                  "home_files[1].content: {{DUMMY_KEY:openai}} names no credential of this job" },
                { HOME1C("{\"path\":\"a\",\"content\":\"{{BROKER_URL:other}}\"}"),
                  "home_files[0].content: {{BROKER_URL:other}} names no credential of this job" },
        };
        int failed = 0;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(job_spec_freep) JobSpec *s = NULL;
                _cleanup_free_ char *error = NULL;
                int r = parse(cases[i].json, &s, &error);

                if (r != -EINVAL || s || !error || !strstr(error, cases[i].error)) {
                        printf("# case %zu: r=%d, error \"%s\", wanted \"%s\"\n", i, r, error ?: "(null)",
                               cases[i].error);
                        failed = 1;
                }
        }
        ASSERT_EQ(0, failed);
}

/* A spec with n files of content c (a JSON string's inside). */
static char *spec_with(size_t n, const char *c) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        fputs("{" BASE "," CRED ",\"home_files\":[", f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s{\"path\":\"f%zu\",\"content\":\"%s\"}", i ? "," : "", i, c);
        fputs("]}", f);
        fclose(f);
        return out;
}

static char *repeat(char c, size_t n) {
        char *s = malloc(n + 1);

        if (s) {
                memset(s, c, n);
                s[n] = 0;
        }
        return s;
}

TEST(spec_home_files_bounds) {
        _cleanup_free_ char *full = repeat('x', HOME_FILE_BYTES_MAX), *over = repeat('x', HOME_FILE_BYTES_MAX + 1);
        _cleanup_free_ char *near = repeat('x', HOME_FILE_BYTES_MAX - HOME_VALUE_MAX);
        _cleanup_free_ char *quarter = repeat('x', HOME_FILES_BYTES_MAX / 4);
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL, *g = NULL;
        _cleanup_free_ char *err1 = NULL, *err2 = NULL, *err3 = NULL, *err4 = NULL, *err5 = NULL;
        _cleanup_free_ char *near_ph = NULL, *near_ph2 = NULL;
        JobSpec *s = NULL;

        ASSERT_TRUE(full && over && near && quarter);
        /* 32 files, each 64 KiB as rendered: 32 are allowed, 33 are not */
        ASSERT_TRUE((a = spec_with(HOME_FILES_MAX, "")) != NULL);
        ASSERT_OK(parse(a, &s, NULL));
        s = job_spec_free(s);
        ASSERT_TRUE((b = spec_with(HOME_FILES_MAX + 1, "")) != NULL);
        ASSERT_ERROR(EINVAL, parse(b, &s, &err1));
        ASSERT_CONTAINS("home_files: more than 32 elements", err1);
        ASSERT_TRUE((c = spec_with(1, full)) != NULL);
        ASSERT_OK(parse(c, &s, NULL));
        s = job_spec_free(s);
        ASSERT_TRUE((d = spec_with(1, over)) != NULL);
        ASSERT_ERROR(EINVAL, parse(d, &s, &err2));
        ASSERT_CONTAINS("home_files[0].content: longer than 65536 bytes", err2);
        /* a placeholder counts at its longest: 128 bytes, whatever it will be */
        ASSERT_TRUE(asprintf(&near_ph, "%s{{JOB_ID}}", near) > 0);
        ASSERT_TRUE((e = spec_with(1, near_ph)) != NULL);
        ASSERT_OK(parse(e, &s, NULL));
        s = job_spec_free(s);
        ASSERT_TRUE(asprintf(&near_ph2, "x%s{{DUMMY_KEY:anthropic}}", near) > 0);
        ASSERT_TRUE((f = spec_with(1, near_ph2)) != NULL);
        ASSERT_ERROR(EINVAL, parse(f, &s, &err3));
        ASSERT_CONTAINS("home_files[0].content: longer than 65536 bytes once rendered", err3);
        /* 256 KiB in all */
        ASSERT_TRUE((g = spec_with(4, quarter)) != NULL);
        ASSERT_OK(parse(g, &s, NULL));
        s = job_spec_free(s);
        free(g);
        ASSERT_TRUE(asprintf(&g, "{" BASE ",\"home_files\":[{\"path\":\"a\",\"content\":\"%s\"},{\"path\":\"b\","
                             "\"content\":\"%s\"},{\"path\":\"c\",\"content\":\"%s\"},{\"path\":\"d\",\"content\":"
                             "\"%s\"},{\"path\":\"e\",\"content\":\"x\"}]}", quarter, quarter, quarter, quarter) > 0);
        ASSERT_ERROR(EINVAL, parse(g, &s, &err4));
        ASSERT_CONTAINS("home_files: more than 262144 bytes in all", err4);
        /* a path of 255 bytes is fine, 256 is not */
        free(g);
        free(full);
        ASSERT_TRUE((full = repeat('p', HOME_PATH_MAX)) != NULL);
        ASSERT_TRUE(home_path_check(full) == NULL);
        ASSERT_TRUE(asprintf(&g, HOME1("{\"path\":\"%sp\",\"content\":\"\"}"), full) > 0);
        ASSERT_ERROR(EINVAL, parse(g, &s, &err5));
        ASSERT_CONTAINS("home_files[0].path:", err5);
        ASSERT_TRUE(home_path_check("1/2/3/4/5/6/7/8") == NULL);
}

static int lookup(HomePlaceholder p, const char *arg, const char *field, void *userdata, const char **ret_value,
                  char **ret_error) {
        static const char *const urls[] = { "http://10.0.0.1:7070/anthropic", "http://10.0.0.1:7070/open-ai" };

        switch (p) {
        case HOME_PLACEHOLDER_JOB_ID:
                *ret_value = "job-42";
                return arg ? -EINVAL : 0;
        case HOME_PLACEHOLDER_BROKER_URL:
                *ret_value = streq(arg, "anthropic") ? urls[0] : urls[1];
                return 0;
        case HOME_PLACEHOLDER_DUMMY_KEY:
                if (streq(arg, "nope"))
                        return error_set(ret_error, -ENOENT, "%s: no such credential", field);
                *ret_value = streq(arg, "anthropic") ? "pond-dummy-aaaa" : "pond-dummy-bbbb";
                return 0;
        default:
                return -EINVAL;
        }
}

static int lookup_too_long(HomePlaceholder p, const char *arg, const char *field, void *userdata,
                           const char **ret_value, char **ret_error) {
        *ret_value = userdata;
        return 0;
}

TEST(render_each_placeholder) {
        _cleanup_free_ char *out = NULL, *out2 = NULL, *out3 = NULL, *error = NULL, *toolong = NULL;
        size_t len = 0;

        ASSERT_OK(home_render("f", "{\"baseURL\":\"{{BROKER_URL:anthropic}}\",\"key\":\"{{DUMMY_KEY:anthropic}}\","
                              "\"other\":\"{{BROKER_URL:open-ai}} {{DUMMY_KEY:open-ai}}\",\"id\":\"{{JOB_ID}}\"}",
                              HOME_FILE_BYTES_MAX, lookup, NULL, &out, &len, &error));
        ASSERT_STREQ("{\"baseURL\":\"http://10.0.0.1:7070/anthropic\",\"key\":\"pond-dummy-aaaa\","
                     "\"other\":\"http://10.0.0.1:7070/open-ai pond-dummy-bbbb\",\"id\":\"job-42\"}", out);
        ASSERT_EQ(strlen(out), len);
        /* no placeholder: the text as it is; lone braces and "}}" are text */
        ASSERT_OK(home_render("f", "a { b } }} {x}", 100, lookup, NULL, &out2, &len, &error));
        ASSERT_STREQ("a { b } }} {x}", out2);
        ASSERT_OK(home_render("f", "", 100, lookup, NULL, &out3, &len, &error));
        ASSERT_STREQ("", out3);
        ASSERT_EQ(0, len);
        /* counting only: each placeholder at its longest */
        ASSERT_OK(home_render("f", "ab{{JOB_ID}}", 1000, lookup, NULL, NULL, &len, &error));
        ASSERT_EQ(2 + HOME_VALUE_MAX, len);
        /* a refusal of the lookup is the refusal */
        ASSERT_ERROR(ENOENT, home_render("home_files[3].content", "{{DUMMY_KEY:nope}}", 100, lookup, NULL, &out3,
                                         &len, &error));
        ASSERT_CONTAINS("home_files[3].content: no such credential", error);
        /* a value longer than its bound, or a result past max */
        ASSERT_TRUE((toolong = repeat('v', HOME_VALUE_MAX + 1)) != NULL);
        ASSERT_ERROR(E2BIG, home_render("f", "{{JOB_ID}}", 1000, lookup_too_long, toolong, NULL, &len, &error));
        ASSERT_CONTAINS("longer than 128 bytes", error);
        ASSERT_ERROR(E2BIG, home_render("f", "0123456789", 9, lookup, NULL, NULL, &len, &error));
        ASSERT_ERROR(E2BIG, home_render("f", "{{JOB_ID}}", HOME_VALUE_MAX - 1, lookup, NULL, NULL, &len, &error));
        ASSERT_OK(home_render("f", "{{JOB_ID}}", HOME_VALUE_MAX, lookup, NULL, NULL, &len, &error));
}

TEST(write_files_beneath) {
        char dir[] = "/tmp/test-home-XXXXXX", path[PATH_MAX];
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;

        ASSERT_TRUE(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(home_write_file(fd, ".config/tool/settings.json", "{}\n", 3, 0600, getuid(), getgid()));
        ASSERT_OK(home_write_file(fd, ".config/tool/run", "#!/bin/sh\n", 10, 0700, getuid(), getgid()));
        snprintf(path, sizeof path, "%s/.config/tool/settings.json", dir);
        ASSERT_OK(read_full_file(path, 100, &text, NULL));
        ASSERT_STREQ("{}\n", text);
        ASSERT_OK(stat(path, &st));
        ASSERT_EQ(0600, st.st_mode & 07777);
        snprintf(path, sizeof path, "%s/.config/tool/run", dir);
        ASSERT_OK(stat(path, &st));
        ASSERT_EQ(0700, st.st_mode & 07777);
        snprintf(path, sizeof path, "%s/.config", dir);
        ASSERT_OK(stat(path, &st));
        ASSERT_EQ(0700, st.st_mode & 07777);
        /* never over what is there, never through a symlink, never a path that is not checked */
        ASSERT_ERROR(EEXIST, home_write_file(fd, ".config/tool/run", "x", 1, 0600, getuid(), getgid()));
        snprintf(path, sizeof path, "%s/link", dir);
        ASSERT_OK(symlink("/tmp", path));
        ASSERT_TRUE(home_write_file(fd, "link/x", "x", 1, 0600, getuid(), getgid()) < 0);
        ASSERT_ERROR(EEXIST, home_write_file(fd, "link", "x", 1, 0600, getuid(), getgid()));
        ASSERT_ERROR(EINVAL, home_write_file(fd, "../x", "x", 1, 0600, getuid(), getgid()));
        ASSERT_ERROR(EINVAL, home_write_file(fd, "/x", "x", 1, 0600, getuid(), getgid()));
        ASSERT_ERROR(EINVAL, home_write_file(fd, "x", "x", 1, 04700, getuid(), getgid()));
        ASSERT_OK(rm_rf_at(AT_FDCWD, dir));
}

TEST(home_size_knob) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_(resolved_policy_freep) ResolvedPolicy *r = NULL, *o = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_json_ json_object *ov = json_tokener_parse("{\"home_size\":\"8M\"}"),
                                   *big = json_tokener_parse("{\"home_size\":\"2G\"}");
        SandboxBlock b = { .profile = (char *) "untrusted-code-write" };

        ASSERT_OK(policy_load(POND_SOURCE_ROOT "/policy", &p, &error));
        ASSERT_OK(policy_resolve(p, &b, &r, &error));
        ASSERT_EQ(64ULL << 20, r->home_bytes);
        b.overrides = ov;
        ASSERT_OK(policy_resolve(p, &b, &o, &error));
        ASSERT_EQ(8ULL << 20, o->home_bytes);
        b.overrides = big;
        resolved_policy_free(o);
        o = NULL;
        ASSERT_ERROR(EINVAL, policy_resolve(p, &b, &o, &error));
        ASSERT_CONTAINS("sandbox.overrides.home_size", error);
}

TEST_MAIN()
