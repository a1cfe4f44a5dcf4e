// `express4` is Express 4.21 installed under an alias; its API is typed by @types/express.
declare module 'express4' {
  import express = require('express');
  export = express;
}
