'use strict';
// The login form itself needs no script; this only explains a failed attempt.
document.addEventListener('DOMContentLoaded', () => {
  const box = document.getElementById('login-error');
  if (new URLSearchParams(location.search).has('failed')) {
    box.textContent = 'That token is not valid.';
    box.hidden = false;
  }
});
