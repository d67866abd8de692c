/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-job-transcript.c: the supervisor's recording of execs through the job's init (job-exec.c, job-init.c,
 * job-transcript.c), with the test as the init on the other end of the channel and as the caller: an exec's
 * output recorded as it is relayed, what the caller received is what the transcript hashes; an exec whose
 * caller went away midway recorded to its end; an exec the init's end overtook recorded without a status;
 * the files linked into a result directory that verifies; a job nobody exec'd into has no transcript. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "job.h"
#include "tests.h"

TEST_MAIN();

#define SPEC "{\"job_id\":\"transcript-test\",\"tenant\":\"t\",\"command\":[\"sh\"]}"

static char dir_[64];

__attribute__((destructor)) static void remove_dir(void) {
        if (dir_[0])
                (void) rm_rf_at(AT_FDCWD, dir_);
}

typedef struct Env {
        Job j;
        ResolvedPolicy res;
        sd_event *e;
        int init;               /* the init's end of the channel: the test speaks for the init */
} Env;

static void env_done(Env *env) {
        env->j.input.resolved = NULL; /* the test's own */
        job_done(&env->j);
        sd_event_unref(env->e);
        safe_close(env->init);
}

/* A running confined job as far as execs need it: its spool, an init channel, the event loop watching it. */
static int env_setup(Env *env) {
        int r;

        *env = (Env) { .j = JOB_NULL, .init = -EBADF };
        if (!dir_[0]) {
                strcpy(dir_, "/tmp/test-job-transcript-XXXXXX");
                if (!mkdtemp(dir_))
                        return -errno;
                setenv("POND_RUNDIR", dir_, 1);
                setenv("POND_STATEDIR", dir_, 1);
        }
        r = job_init(&env->j, "transcript-test");
        if (r >= 0)
                r = job_spec_parse(SPEC, strlen(SPEC), &env->j.input.spec, NULL);
        if (r >= 0)
                r = mkdir_p(env->j.paths.spool, 0700);
        if (r < 0)
                return r;
        env->res.confined = true;
        env->res.exec_concurrency = POLICY_EXEC_CONCURRENCY_DEFAULT;
        env->j.input.resolved = &env->res;
        env->j.input.provider = &runtime_runc;
        r = job_init_prepare(&env->j);
        if (r < 0)
                return r;
        env->init = fcntl(env->j.console.init.child_fd, F_DUPFD_CLOEXEC, 3);
        job_init_handed_over(&env->j);
        if (env->init < 0)
                return -errno;
        r = sd_event_new(&env->e);
        if (r >= 0)
                r = job_init_watch(&env->j, env->e);
        if (r < 0)
                return r;
        env->j.console.event = env->e;
        env->j.console.listen = open("/dev/null", O_RDONLY | O_CLOEXEC); /* listening: execs are taken */
        env->j.runtime.init_pid = getpid();
        return 0;
}

/* A caller's connection asking for argv (with stdin bytes, if any); its other end in *ret_peer. */
static int exec_call(Env *env, char **argv, char **envv, const char *stdin_data, int *ret_peer, ConsoleConn **ret) {
        ConsoleExecRequest req = { .argv = argv, .env = envv, .want_stdin = !!stdin_data };
        _cleanup_free_ char *buf = NULL, *packet = NULL;
        ConsoleConn *c;
        size_t len = 0;
        int sp[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -errno;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        *c = (ConsoleConn) { .job = &env->j, .fd = sp[0], .uid = 1000, .kind = CONSOLE_CONN_EXEC,
                             .pid = PIDREF_NULL, .pipe = { -EBADF, -EBADF }, .init_slot = -1,
                             .next = env->j.console.conns };
        env->j.console.conns = c;
        *ret_peer = sp[1];
        r = console_pack_exec(&req, &buf, &len);
        if (r < 0)
                return r;
        packet = malloc(len + 1);
        if (!packet)
                return -ENOMEM;
        packet[0] = CONSOLE_EXEC_REQUEST;
        memcpy(packet + 1, buf, len);
        r = job_exec_request(c, packet, len + 1);
        if (r >= 0 && stdin_data) {
                char in[64] = { CONSOLE_INPUT }, eof = CONSOLE_EOF;
                size_t n = strlen(stdin_data);

                memcpy(in + 1, stdin_data, n);
                r = job_exec_input(c, in, n + 1);
                if (r >= 0)
                        r = job_exec_input(c, &eof, 1);
        }
        *ret = c;
        return r;
}

/* The init reads one frame (blocking): its type and slot. */
static int init_read(Env *env, InitFrame *ret) {
        char buf[sizeof(InitFrame) + INIT_FRAME_MAX];
        ssize_t n = recv(env->init, buf, sizeof(InitFrame), MSG_WAITALL);

        if (n != sizeof(InitFrame))
                return -EIO;
        memcpy(ret, buf, sizeof *ret);
        if (ret->len > 0 && recv(env->init, buf, ret->len, MSG_WAITALL) != (ssize_t) ret->len)
                return -EIO;
        return 0;
}

static int init_send(Env *env, unsigned slot, InitMessage type, const void *data, size_t len) {
        char buf[sizeof(InitFrame) + INIT_CHUNK_MAX];
        InitFrame h = { .len = (uint32_t) len, .slot = (uint16_t) slot, .type = (uint8_t) type };

        memcpy(buf, &h, sizeof h);
        memcpy(buf + sizeof h, data, len);
        return send(env->init, buf, sizeof h + len, MSG_NOSIGNAL) == (ssize_t) (sizeof h + len) ? 0 : -EIO;
}

static int init_exit(Env *env, unsigned slot, int status, uint32_t flags) {
        InitExit x = { .status = status, .flags = flags };
        return init_send(env, slot, INIT_EXIT, &x, sizeof x);
}

static void loop_run(Env *env) {
        for (int i = 0; i < 20 && sd_event_run(env->e, 10 * 1000) > 0; i++)
                ;
}

/* What the caller received: its stdout bytes appended to out, its status (or -1). */
static void caller_read(int peer, char *out, size_t size, int *ret_status) {
        char buf[CONSOLE_PACKET_MAX];
        ssize_t n;

        *ret_status = -1;
        while ((n = recv(peer, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
                if (buf[0] == CONSOLE_STDOUT && strlen(out) + (size_t) n < size)
                        strncat(out, buf + 1, (size_t) n - 1);
                if (buf[0] == CONSOLE_EXIT && n >= 5)
                        memcpy(ret_status, buf + 1, sizeof(int32_t));
        }
}

/* The line of exec seq in the spool's index, parsed. */
static json_object *index_line(Env *env, unsigned seq) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len = 0;

        if (asprintf(&path, "%s/%s/%s", env->j.paths.spool, TRANSCRIPT_DIR, TRANSCRIPT_INDEX_FILE) < 0 ||
            read_full_file(path, TRANSCRIPT_INDEX_MAX, &buf, &len) < 0)
                return NULL;
        for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
                json_object *o;

                *nl = 0;
                o = json_tokener_parse(p);
                if (json_object_get_int64(json_object_object_get(o, "seq")) == seq)
                        return o;
                json_object_put(o);
        }
        return NULL;
}

static const char *stream_sha(json_object *line, const char *stream) {
        return json_object_get_string(json_object_object_get(json_object_object_get(line, stream), "sha256"));
}

TEST(execs_through_the_init_are_recorded) {
        _cleanup_(env_done) Env env = {};
        _cleanup_json_ json_object *one = NULL, *two = NULL, *three = NULL, *result = NULL;
        _cleanup_free_ char *err = NULL, *resdir = NULL;
        _cleanup_close_ int peer1 = -EBADF, peer2 = -EBADF, peer3 = -EBADF, res = -EBADF;
        char *argv1[] = { "sh", "-c", "echo hello; exit 3", NULL }, *env1[] = { "KEY=secret-value", NULL };
        char *argv2[] = { "sleep", "1", NULL }, *argv3[] = { "sleep", "300", NULL };
        char got[256] = "", hex[SHA256_HEX_SIZE];
        ConsoleConn *c1, *c2, *c3;
        InitFrame h;
        int status;

        ASSERT_OK(env_setup(&env));

        /* exec 1: output relayed and recorded, its status 3 */
        ASSERT_OK(exec_call(&env, argv1, env1, "some input", &peer1, &c1));
        ASSERT_EQ(1u, c1->number);
        ASSERT_OK(init_read(&env, &h));
        ASSERT_EQ(INIT_EXEC, h.type);
        ASSERT_OK(init_send(&env, h.slot, INIT_STDOUT, "hello\n", 6));
        loop_run(&env);
        ASSERT_OK(init_read(&env, &h));
        ASSERT_EQ(INIT_ACK, h.type);
        ASSERT_OK(init_exit(&env, h.slot, 3, 0));
        loop_run(&env);
        caller_read(peer1, got, sizeof got, &status);
        ASSERT_STREQ("hello\n", got);
        ASSERT_EQ(3, status);

        /* exec 2: its caller goes away midway; what the command still prints is recorded */
        ASSERT_OK(exec_call(&env, argv2, NULL, NULL, &peer2, &c2));
        ASSERT_EQ(2u, c2->number);
        ASSERT_OK(init_read(&env, &h));
        job_console_conn_free(c2); /* as the socket's hangup does (job-console.c) */
        peer2 = safe_close(peer2);
        ASSERT_OK(init_send(&env, h.slot, INIT_STDOUT, "late output\n", 12));
        loop_run(&env);
        ASSERT_OK(init_read(&env, &h));
        ASSERT_EQ(INIT_ACK, h.type); /* acknowledged at once: nobody waits for it */
        ASSERT_OK(init_exit(&env, h.slot, 0, 0));
        loop_run(&env);

        /* exec 3: the init ends under it */
        ASSERT_OK(exec_call(&env, argv3, NULL, NULL, &peer3, &c3));
        ASSERT_OK(init_read(&env, &h));
        ASSERT_OK(init_send(&env, h.slot, INIT_STDERR, "partial", 7));
        loop_run(&env);
        env.init = safe_close(env.init);
        loop_run(&env);

        ASSERT_FALSE(job_transcript_running(&env.j, 3));
        one = index_line(&env, 1);
        two = index_line(&env, 2);
        three = index_line(&env, 3);
        ASSERT_TRUE(one && two && three);
        ASSERT_EQ(3, json_object_get_int64(json_object_object_get(one, "status")));
        ASSERT_EQ(1000, json_object_get_int64(json_object_object_get(one, "uid")));
        ASSERT_STREQ("init", json_object_get_string(json_object_object_get(one, "via")));
        ASSERT_STREQ("[\"KEY\"]",
                     json_object_to_json_string_ext(json_object_object_get(one, "env"), JSON_C_TO_STRING_PLAIN));
        sha256_hex(got, strlen(got), hex); /* what the caller received */
        ASSERT_STREQ(hex, stream_sha(one, "stdout"));
        sha256_hex("some input", 10, hex);
        ASSERT_STREQ(hex, stream_sha(one, "stdin"));
        sha256_hex("late output\n", 12, hex);
        ASSERT_STREQ(hex, stream_sha(two, "stdout"));
        ASSERT_EQ(0, json_object_get_int64(json_object_object_get(two, "status")));
        sha256_hex("partial", 7, hex);
        ASSERT_STREQ(hex, stream_sha(three, "stderr"));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(three, "init_ended")));
        ASSERT_TRUE(json_object_is_type(json_object_object_get(three, "status"), json_type_null));

        /* collected into a result directory, which verifies */
        ASSERT_TRUE(asprintf(&resdir, "%s/result", dir_) > 0);
        ASSERT_OK(mkdir(resdir, 0700));
        res = open(resdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(res >= 0);
        ASSERT_OK(job_transcript_collect(&env.j, res));
        result = json_object_new_object();
        json_object_object_add(result, TRANSCRIPT_DIR, job_transcript_json(&env.j));
        ASSERT_EQ(3, json_object_get_int64(json_object_object_get(json_object_object_get(result, TRANSCRIPT_DIR),
                                                                   "count")));
        ASSERT_OK(transcript_verify(res, result, &err));
}

TEST(no_exec_no_transcript) {
        _cleanup_(env_done) Env env = {};
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int res = -EBADF;
        struct stat st;

        ASSERT_OK(env_setup(&env));
        ASSERT_TRUE(asprintf(&path, "%s/%s", env.j.paths.spool, TRANSCRIPT_DIR) > 0);
        (void) rm_rf_at(AT_FDCWD, path);
        res = open(dir_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_OK(job_transcript_collect(&env.j, res));
        ASSERT_TRUE(job_transcript_json(&env.j) == NULL);
        ASSERT_TRUE(stat(path, &st) < 0 && errno == ENOENT);
}
