'use strict';
// The login form itself needs no script; this only explains a failed attempt.
document.addEventListener('DOMContentLoaded', () => {
  const params = new URLSearchParams(location.search);
  const box = document.getElementById('login-error');
  if (params.has('locked')) {
    box.textContent = 'Too many failed attempts: wait a minute.';
    box.hidden = false;
  } else if (params.has('failed')) {
    box.textContent = 'That token is not valid.';
    box.hidden = false;
  }
});
