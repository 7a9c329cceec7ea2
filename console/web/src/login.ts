// The login form: POST /api/login {"user","password"} answers the session.
import { ApiError, describeError, postLogin } from "./api";
import { el, field, input, setText } from "./dom";
import type { Session } from "./types";

export function renderLogin(root: HTMLElement, onSession: (s: Session) => void): void {
  const user = input("user", { testid: "login-user", attrs: { autocomplete: "username", required: true, autofocus: true } });
  const password = input("password", { testid: "login-password", attrs: { autocomplete: "current-password", required: true } }, "password");
  const error = el("p", { class: "login-error", testid: "login-error", attrs: { role: "alert", hidden: true } });
  const submit = el("button", { class: "primary", testid: "login-submit" }, "Sign in");
  submit.type = "submit";

  const form = el(
    "form",
    { class: "login-form", attrs: { method: "post", action: "#", novalidate: true } },
    el("h1", null, "Baton console"),
    field("User", user),
    field("Password", password),
    submit,
    error,
  );

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    error.hidden = true;
    if (!user.value || !password.value) {
      setText(error, "Enter your user name and password.");
      error.hidden = false;
      return;
    }
    submit.disabled = true;
    postLogin<Session>({ user: user.value, password: password.value })
      .then((session) => {
        password.value = "";
        onSession(session);
      })
      .catch((e: unknown) => {
        const msg =
          e instanceof ApiError && e.status === 429
            ? `Too many failed logins: ${e.message}. Try again in a few minutes.`
            : describeError(e);
        setText(error, msg);
        error.hidden = false;
        password.value = "";
        password.focus();
      })
      .finally(() => {
        submit.disabled = false;
      });
  });

  root.replaceChildren(el("main", { class: "login-page" }, form));
  user.focus();
}
